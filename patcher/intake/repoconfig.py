"""Per-repository defaults: `[tool.patcher]` in the base tree's pyproject.toml, under the caller's flags.

    [tool.patcher]
    test = "python -m pytest -q tests/test_api.py"   # reproduces the crash (like --test)
    suite = "python -m pytest -q tests"              # pass-to-pass suite (like --suite)
    setup = "pip install -e ."                       # installs dependencies (like --setup)
    allowlist = ["python -m mypkg.selftest"]         # extra run_test prefixes for the agent

The table is read from the staged base tree, never from a diff, and a flag always wins over it.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from patcher.config import DEFAULT_SUITE, SandboxConfig
from patcher.errors import BadInput
from patcher.intake.runners import declared_prefixes, suite_for

"""The pass-to-pass suite when neither a flag nor the repository names one."""
MAX_PYPROJECT_BYTES = 1_000_000


class RepoSettings(BaseModel):
    """The `[tool.patcher]` table."""

    model_config = ConfigDict(extra="forbid")

    test: str | None = Field(None, min_length=1, description="Command that reproduces the crash.")
    suite: str | None = Field(None, min_length=1, description="Command that runs the pass-to-pass suite.")
    setup: str | None = Field(None, min_length=1, description="Command that installs the dependencies.")
    allowlist: list[str] = Field(default_factory=list, description="Extra run_test command prefixes.")


@dataclass(frozen=True)
class Effective:
    """What a job runs with, and where each setting came from (flag, pyproject, default)."""

    test_command: str | None
    suite_command: str
    setup: str | None
    sandbox: SandboxConfig
    sources: dict[str, str] = field(default_factory=dict)


def read_repo_settings(tree: Path) -> RepoSettings:
    """The table from `tree/pyproject.toml`; empty when there is none (or the file is no regular TOML file)."""
    path = tree / "pyproject.toml"
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_PYPROJECT_BYTES:
        return RepoSettings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return RepoSettings()  # pytest and pip will say what is wrong with it; patcher has no table to read
    table = data.get("tool", {}).get("patcher", {}) if isinstance(data.get("tool"), dict) else {}
    try:
        return RepoSettings.model_validate(table)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'table'}: {err['msg']}" for err in e.errors())
        raise BadInput(f"[tool.patcher] in pyproject.toml is not valid ({problems}); keys: test, suite, setup, "
                       "allowlist") from e


def effective(tree: Path, test_command: str | None, suite_command: str | None, setup: str | None,
              sandbox: SandboxConfig) -> Effective:
    """Flags over the repository's table over the defaults."""
    table = read_repo_settings(tree)
    sources = {name: "flag" if flag else "pyproject" if value else "default"
               for name, flag, value in (("test", test_command, table.test), ("suite", suite_command, table.suite),
                                         ("setup", setup, table.setup))}
    test = test_command or table.test
    suite = suite_command or table.suite or suite_for(test, tree) or DEFAULT_SUITE  # intake/runners.py
    extra = [_prefix(entry) for entry in table.allowlist] + declared_prefixes(tree, [test, suite])
    extra = [p for n, p in enumerate(extra) if p not in extra[:n] and p not in sandbox.allowlist]
    if extra:
        sandbox = sandbox.model_copy(update={"allowlist": [*sandbox.allowlist, *extra]})
    return Effective(test, suite, setup or table.setup, sandbox, sources)


def _prefix(entry: str) -> list[str]:
    try:
        argv = shlex.split(entry)
    except ValueError as e:
        raise BadInput(f"[tool.patcher] allowlist entry {entry!r} does not parse ({e})") from e
    if not argv:
        raise BadInput("[tool.patcher] allowlist entries must not be empty")
    return argv
