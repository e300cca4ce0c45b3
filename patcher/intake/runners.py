"""Test runners a repository declares beyond pytest: what the agent's allowlist grows by, and the suite a
runner implies when none is named.

The allowlist grows only by Python entry points the repository or the user declares, never by the agent's
wish, and never by another program (a `make test` or shell line declared in tox.ini stays refused):
- the test and suite commands themselves (a flag or `[tool.patcher]`): their runner's prefix;
- a `manage.py` at the root: `python manage.py test` (Django's runner; no other management command);
- every tox.ini `commands` line that runs `python -m MODULE` or `python SCRIPT.py` (`{envpython}` and
  `{envbindir}/python` are python; the prefix stops at the first substitution or option).
A prefix is the program, then `-m MODULE` or the script (with `test` for manage.py).
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from sandbox.commands import runner_of

_TOX_PYTHON = re.compile(r"\{env(?:python|bindir/python3?)\}")
MAX_TOX_BYTES = 256 * 1024
_PYTEST_FILES = ("conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")


def runner_prefix(command: str | None) -> list[str] | None:
    """The prefix of a command that runs a project's own Python test runner (sandbox/commands.py); None for
    pytest, unittest, `python -c` and anything that is not Python."""
    argv = _argv(command)
    runner = runner_of(argv)
    return argv[:runner.start] if runner and runner.own else None


def suite_for(test_command: str | None, tree: Path) -> str | None:
    """The whole suite of the test command's runner (its prefix alone), or Django's when the repository is
    a Django project without pytest configuration; None for pytest."""
    argv = _argv(test_command)
    runner = runner_of(argv)
    if runner and (runner.own or runner.name == "unittest"):
        return shlex.join(argv[:runner.start])
    if not test_command and _django_without_pytest(tree):
        return "python manage.py test"
    return None


def _argv(command: str | None) -> list[str]:
    try:
        return shlex.split(command or "")
    except ValueError:
        return []


def declared_prefixes(tree: Path, commands: Iterable[str | None]) -> list[list[str]]:
    """Prefixes the repository and the user declare, in a stable order, without repeats."""
    found = [runner_prefix(c) for c in commands]
    if _regular(tree / "manage.py"):
        found.append(["python", "manage.py", "test"])
    found += [runner_prefix(line) for line in _tox_commands(tree)]
    out: list[list[str]] = []
    for prefix in found:
        if prefix and prefix not in out:
            out.append(prefix)
    return out


def _tox_commands(tree: Path) -> list[str]:
    path = tree / "tox.ini"
    if not _regular(path) or path.stat().st_size > MAX_TOX_BYTES:
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (configparser.Error, UnicodeDecodeError):
        return []
    lines = []
    for section in parser.sections():
        if section == "tox" or section.startswith(("testenv", "tox:")):
            for line in parser.get(section, "commands", fallback="").splitlines():
                line = _TOX_PYTHON.sub("python", line.strip().lstrip("-").strip())
                lines.append(line.split("{", 1)[0])
    return lines


def _django_without_pytest(tree: Path) -> bool:
    if not _regular(tree / "manage.py") or any((tree / name).exists() for name in _PYTEST_FILES):
        return False
    pyproject = tree / "pyproject.toml"
    return not (_regular(pyproject) and "[tool.pytest" in pyproject.read_text(errors="replace"))


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()
