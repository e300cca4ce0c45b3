"""Cloning a git URL for a job: bounded in time and in bytes, with none of the host's git config or helpers.

The clone runs with patcher's own git settings (no system or global config, so no credential helper,
no insteadOf rewrites; no hooks; no ext:: or file:// transport) and is killed when it runs past
`timeout_s` or its directory grows past `max_bytes`; either is a BadInput naming the limit.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from patcher.errors import BadInput
from patcher.intake.gitview import SAFE_GIT, host_env


class CloneLimits(BaseModel):
    """How long a clone may take and how much it may write."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    timeout_s: float = Field(300.0, gt=0)
    """Seconds the clone and checkout may take together."""
    max_bytes: int = Field(1024 * 2**20, ge=1)
    """Bytes the clone directory (objects and checkout) may hold."""
    resolve: list[str] = Field(default_factory=list)
    """`host:port:address` pins for http(s) URLs (git's http.curloptResolve): git connects to the address
    that was checked, so a DNS answer that changes after the check (rebinding) is not followed."""


def clone_url(url: str, ref: str | None, dest: Path, limits: CloneLimits) -> Path:
    """`url` cloned into `dest` and `ref` (default: the remote HEAD) checked out, detached."""
    deadline = time.monotonic() + limits.timeout_s
    pins = [arg for pin in limits.resolve for arg in ("-c", f"http.curloptResolve={pin}")]
    steps = [(dest.parent, [*pins, "clone", "--quiet", "--no-checkout", "--no-recurse-submodules", "--", url,
                            str(dest)]),
             (dest, ["checkout", "--quiet", "--detach", ref or "HEAD", "--"])]
    for cwd, args in steps:
        code, err = _bounded(cwd, args, dest, deadline, limits)
        if code != 0:
            last = (err.strip().splitlines()[-1:] or [""])[0].strip()
            raise BadInput(f"cannot check out {ref or 'HEAD'} of {url}: {last}")
    return dest


def _bounded(cwd: Path, args: list[str], watched: Path, deadline: float, limits: CloneLimits) -> tuple[int, str]:
    with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile(dir=cwd) as err:
        proc = subprocess.Popen(["git", *SAFE_GIT, *args], cwd=cwd, env=host_env(), stdin=stdin,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    raise BadInput(f"the clone took longer than {limits.timeout_s:.0f} s (the server's limit)")
                if _size(watched) > limits.max_bytes:
                    raise BadInput(f"the clone grew past {limits.max_bytes // 2**20} MiB (the server's limit)")
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)  # its own session: the git helpers it started go too
                proc.wait()
        err.seek(0)
        return proc.returncode, err.read().decode("utf-8", "replace")[-4000:]


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            with contextlib.suppress(FileNotFoundError):  # git renames temp files as it goes
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total
