"""One run answers two commands: when the reproduction's tests are part of the suite, the suite's per-test
results (the harness's signed stream) answer the reproduction too, on the same tree.

Only for pytest, only when both commands are spelled the same (`pytest` or `python -m pytest`, the same
flag-only options) and the reproduction names test files or node ids. The suite's run must then show
every target it names as run; anything else (a target it did not collect, a flag this module does not
know, a run without a stream) answers None, and the caller runs the reproduction on its own. Callers use a
derived run only where it can decide nothing on its own that a run of its own would decide otherwise (a
reproduction confirmed on the base, one pass of several required with a diff).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from patcher.verify.testruns import TestRun, pytest_prefix

FLAGS = frozenset({"-q", "-qq", "-v", "-vv", "-s", "-ra", "-rA", "-rf", "--no-header", "--color=no", "-l",
                   "--showlocals"})
"""Options that change only what pytest prints, never which tests run or how they end."""
MAX_NODES = 50


def targets_in(repro: str | None, suite: str) -> list[str] | None:
    """The reproduction's targets (files, node ids) when the suite runs them the same way, else None."""
    r, s = _pytest(repro or ""), _pytest(suite)
    if r is None or s is None or r[:2] != s[:2] or not r[2]:
        return None
    targets, suite_paths = r[2], s[2]
    if any(".py" not in t.split("::")[0] for t in targets):
        return None
    if suite_paths and not all(_under(t.split("::")[0], suite_paths) for t in targets):
        return None
    return targets


def derived(suite_run: TestRun, repro: str, targets: list[str]) -> TestRun | None:
    """The reproduction's run read off the suite's: its tests' outcomes, None when a target did not run."""
    if suite_run.stream is None or suite_run.stream.absent or not suite_run.reported or suite_run.tampered:
        return None
    ran = suite_run.passed | suite_run.failed
    mine = {t for t in ran if any(_names(target, t) for target in targets)}
    if not all(any(_names(target, t) for t in ran) for target in targets):
        return None
    failed = suite_run.failed & mine
    return replace(suite_run, command=repro, exit_code=1 if failed else 0, passed=suite_run.passed & mine,
                   failed=failed, answered_by=suite_run.command)


def narrowed(command: str, tests: set[str], limit: int = MAX_NODES) -> str | None:
    """`command` run on `tests` (node ids, at most `limit`) instead of its own targets, when that is
    narrower; else None."""
    parsed = _pytest(command)
    if parsed is None or not tests or len(tests) > limit or not all("::" in t for t in tests):
        return None
    prefix, opts, targets = parsed
    if set(targets) == tests or (targets and not all(any(_names(target, t) for target in targets) for t in tests)):
        return None
    return shlex.join([*prefix, *opts, *sorted(tests)])


def _pytest(command: str) -> tuple[list[str], list[str], list[str]] | None:
    """(prefix, options, targets) of a pytest command whose options only change what is printed; else None."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    prefix = pytest_prefix(command)
    if prefix not in (["pytest"], ["python", "-m", "pytest"]):
        return None
    opts, targets = _split(argv[len(prefix):])
    return None if opts is None else (prefix, opts, targets)


def _split(args: list[str]) -> tuple[list[str] | None, list[str]]:
    opts = [a for a in args if a.startswith("-")]
    if not all(a in FLAGS or a.startswith("--tb=") for a in opts):
        return None, []
    return opts, [a for a in args if not a.startswith("-")]


def _under(path: str, roots: list[str]) -> bool:
    clean = [root.rstrip("/").removeprefix("./") for root in roots]
    return any(root in ("", ".") or path == root or path.startswith(root + "/") for root in clean)


def _names(target: str, test_id: str) -> bool:
    """Whether the target (a directory, a file or a node id) names the test."""
    return test_id == target or test_id.startswith((target + "::", target + "[", target.rstrip("/") + "/"))
