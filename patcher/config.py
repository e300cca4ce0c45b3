"""The sandbox's config object (`SandboxConfig`) and the constants every stage shares: image tags, the
sandbox uid, the default suite, the label on what patcher creates. Every field says what it is for; the
other components keep their config beside them (env/config.py, model/config.py, server/settings.py)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sandbox.commands import DEFAULT_ALLOWLIST

SANDBOX_IMAGE = os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest"
"""Tag of the sandbox image; PATCHER_SANDBOX_IMAGE names another (one per checkout, say)."""
OFFLINE_BASE_IMAGE = "patcher-base:bookworm"
DEFAULT_PYTHON = os.environ.get("PATCHER_DEFAULT_PYTHON") or "3.11"
"""The Python (X.Y) of SANDBOX_IMAGE: boxes run it unless a repository asks for another. 3.11 is the offline
base's (Debian bookworm); PATCHER_DEFAULT_PYTHON names another (CI runs the sandbox tests on each this way)."""
PYTHON_LABEL = "io.patcher.python"
"""Label of a sandbox (and offline base) image: the full version of its python3, e.g. 3.9.2."""
SANDBOX_UID = 47213
"""uid of the unprivileged sandbox user; chosen to exist nowhere on a host (checked at image build)."""
SETUP_UID = 47214
"""uid the environment setup installs as (patcher/env/build.py): not the boxes', so the box user, whose root
filesystem is writable by permission only, cannot change the installed venv. Exists nowhere on a host either."""
DEFAULT_SUITE = "python -m pytest -q"
"""The suite command when neither the caller nor [tool.patcher] names one."""
LABEL = "io.patcher.managed"
"""Label carried by every container, volume and image patcher creates."""


class SandboxConfig(BaseModel):
    """How one job's container is started and bounded."""

    model_config = ConfigDict(extra="forbid")

    image: str = Field(SANDBOX_IMAGE, description="Image the container starts from (sandbox or environment).")
    uid: int = Field(SANDBOX_UID, description="Unprivileged uid the tool server and tests run as.")
    memory_mb: int = Field(2048, description="Memory limit; swap is set equal, so no swap is added.")
    workspace_mb: int = Field(768, description="Size of the tmpfs workspace; counts against memory_mb.")
    tmp_mb: int = Field(256, description="Size of the /tmp tmpfs.")
    cpus: float = Field(1.0, description="CPU limit (nano_cpus).")
    cpu_shares: int | None = Field(None, ge=2, description="Relative CPU weight when CPUs are contended (Docker's "
                                   "cpu_shares, 1024 by default); the template search's boxes in auto mode get a "
                                   "low one, so they never slow the agent's runs.")
    pids: int = Field(256, description="Most processes and threads the container may hold.")
    nofile: int = Field(1024, description="Open-file limit per process.")
    log_max: str = Field("1m", description="Cap on the json-file log of the container.")
    call_timeout_s: float = Field(60.0, description="Default deadline of one tool call inside the container.")
    test_timeout_s: float = Field(300.0, description="Deadline of one run_test call inside the container.")
    backstop_s: float = Field(15.0, description="Extra seconds the host waits past a deadline before killing.")
    allowlist: list[list[str]] = Field(default_factory=list,
                                       description="Extra run_test argv prefixes on top of the default list.")


def patcher_home() -> Path:
    """Where traces, the SQLite store, keys and the environment index live: $PATCHER_HOME, else ~/.patcher."""
    return Path(os.environ.get("PATCHER_HOME") or Path.home() / ".patcher")


def allowlist_of(cfg: SandboxConfig) -> tuple[tuple[str, ...], ...]:
    """The run_test argv prefixes a box allows: the default list and the configured extras."""
    return DEFAULT_ALLOWLIST + tuple(tuple(p) for p in cfg.allowlist)

