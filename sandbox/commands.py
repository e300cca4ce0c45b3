"""Test commands, shared by the host and the tool server: which runner a command runs, what is allowed by
default, and the check every `run_test` command passes before it runs (an argv, never a shell line).

A runner is one entry of RUNNERS; `runner_of(argv)` names it and says where its own arguments start. The
host reads it to choose how a run is judged (patcher/verify/testruns.py) and which commands a repository's
declarations add to the allowlist (patcher/intake/runners.py); the box reads it to put the run under its
harness (evidence.py). Adding a runner is one entry here, its harness in harness/, and its row in the
table of runners in docs/usage.md. Standard library only.
"""

from __future__ import annotations

import re
import shlex
from typing import Literal, NamedTuple

PROGRAM, PYTHON, MODULE, SCRIPT = "<program>", "<python>", "<module>", "<script.py>"
"""Words of a prefix that stand for more than themselves (Runner.prefix)."""
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")


class Runner(NamedTuple):
    """A test runner: how an argv that runs it starts, and how the box takes each test's outcome from it."""

    name: str
    """pytest, unittest, python-c (no runner: the exit code is the one test), django, or script (a project's
    own runner: `python -m pkg.runtests`, `python tests/run.py`)."""
    prefix: tuple[str, ...]
    """The argv's first words: each as written (a `.py` word also matches a path ending in it), or PROGRAM (any
    program: the allowlist says which may run), PYTHON (python, python3, python3.X), MODULE (a module's name)
    or SCRIPT (a `.py` file other than Django's manage.py, which runs tests only as `manage.py test`)."""
    harness: str | None = None
    """The harness module (harness/) that streams each test's outcome; None: the exit code is all there is."""
    enters: Literal["plugin", "instead", "around"] | None = None
    """How the harness comes in: as pytest's plugin (PYTEST_ADDOPTS, the argv unchanged), in the runner's
    place (given the runner's own arguments), or around the whole command (a project's own runner)."""
    default: bool = False
    """Allowed unless a job says otherwise (DEFAULT_ALLOWLIST spells PROGRAM as python and python3)."""

    @property
    def start(self) -> int:
        """Where the runner's own arguments start: `argv[:start]` is its prefix as the argv spells it."""
        return len(self.prefix)

    @property
    def own(self) -> bool:
        """A project's own runner: allowed only as the repository or the user declares it (its prefix), and its
        exit code is its verdict (the harness around it records the tests it ran)."""
        return self.enters == "around"


RUNNERS: tuple[Runner, ...] = (
    Runner("pytest", (PROGRAM, "-m", "pytest"), "patcher_evidence", "plugin", default=True),
    Runner("pytest", ("pytest",), "patcher_evidence", "plugin", default=True),
    Runner("unittest", (PROGRAM, "-m", "unittest"), "patcher_unittest", "instead", default=True),
    Runner("python-c", (PROGRAM, "-c"), default=True),
    Runner("django", (PYTHON, "manage.py", "test"), "patcher_runner", "around"),
    Runner("script", (PYTHON, "-m", MODULE), "patcher_runner", "around"),
    Runner("script", (PYTHON, SCRIPT), "patcher_runner", "around"),
)
"""Every runner patcher knows, in the order they are tried and allowed (DEFAULT_ALLOWLIST)."""
_TRIED = sorted(RUNNERS, key=lambda r: r.prefix[0] in (PROGRAM, PYTHON))  # `pytest -m pytest`: a marker


def runner_of(argv: list[str]) -> Runner | None:
    """The runner `argv` runs: the first of RUNNERS whose prefix fits it, one called by its own name (`pytest`)
    before those a Python runs; None for any other command."""
    for runner in _TRIED:
        if len(argv) >= runner.start and all(_fits(w, p) for w, p in zip(argv, runner.prefix)):
            return runner
    return None


def _fits(word: str, pattern: str) -> bool:
    if pattern == PROGRAM:
        return True
    if pattern == PYTHON:
        return bool(_PYTHON.fullmatch(word))
    if pattern == MODULE:
        return not word.startswith("-")
    if pattern == SCRIPT:
        return word.endswith(".py") and not word.startswith("-") and not _fits(word, "manage.py")
    return word == pattern or (pattern.endswith(".py") and word.endswith("/" + pattern))


def _spelled(prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """A default runner's prefix as the allowlist spells it: PROGRAM as python and as python3."""
    if prefix[0] != PROGRAM:
        return [prefix]
    return [(python, *prefix[1:]) for python in ("python", "python3")]


DEFAULT_ALLOWLIST: tuple[tuple[str, ...], ...] = tuple(p for r in RUNNERS if r.default for p in _spelled(r.prefix))
"""`run_test` argv prefixes allowed unless a job extends the list: the default runners'."""

SHELL_OPERATORS = frozenset({";", "&&", "||", "|", "&", ">", ">>", "<", "<<", "<<<", "|&", ">&", "<&", "(", ")"})


def check_command(command: str, allow: tuple[tuple[str, ...], ...] = DEFAULT_ALLOWLIST) -> list[str]:
    """The argv of an allowed test command, or ValueError with a sentence naming what is allowed."""
    allowed = "; ".join(" ".join(p) + " …" for p in allow)
    if any(c in command for c in ("`", "$(", "${", "\n", "\r")):
        raise ValueError(f"refused: command substitution and newlines are not allowed. Allowed: {allowed}")
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as e:
        raise ValueError(f"refused: cannot parse the command ({e}). Allowed: {allowed}") from e
    ops = [t for t in tokens if t in SHELL_OPERATORS or set(t) <= set("();<>|&")]
    if ops:
        raise ValueError(
            f"refused: shell operators ({' '.join(ops)}) are not allowed; commands run without a shell, "
            f"one program at a time. Allowed: {allowed}")
    argv = shlex.split(command)
    if not any(tuple(argv[: len(p)]) == p and len(argv) >= len(p) for p in allow):
        prog = argv[0] if argv else "(empty)"
        raise ValueError(f"refused: {prog!r} is not an allowed test command. Allowed: {allowed}")
    return argv
