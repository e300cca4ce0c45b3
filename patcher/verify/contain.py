"""One run answers two commands: when the reproduction's tests are part of the suite, the suite's per-test
results (the harness's signed stream) answer the reproduction too, on the same tree.

Only for pytest, only when both commands are spelled the same (`pytest` or `python -m pytest`) with
options that change neither which tests run nor how they end (what is printed: `-q`, `-rA`, `--tb=…`,
`-p no:cacheprovider`, which the harness adds anyway; these may differ between the two), the same
capture setting, and the reproduction names test files, directories or node ids under the suite's paths,
or nothing at all when the suite names nothing either (the reproduction is then the suite itself, spelled
another way: WHOLE). The suite's run must then show every target it names as run; anything else (a
target it did not collect, a flag this module does not know, a run without a stream) answers None, and
the caller runs the reproduction on its own. Callers use a derived run only where it can decide nothing
on its own that a run of its own would decide otherwise (a reproduction confirmed on the base, one pass
of several required with a diff).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from patcher.verify.testruns import TestRun, pytest_prefix

FLAGS = frozenset({"-q", "-qq", "-v", "-vv", "--no-header", "--color=no", "--color=yes", "--color=auto", "-l",
                   "--showlocals", "--no-summary", "--code-highlight=no"})
"""Options that change only what pytest prints, never which tests run or how they end (also `-r…`, `--tb=…`)."""
PRINTING = ("-r", "--tb=", "--durations=")
CAPTURE = {"-s": "-s", "--capture=no": "-s"}
"""Options that may change how a test ends (what it sees on its stdout): the two commands must agree."""
PLUGINS_OFF = frozenset({"no:cacheprovider"})
"""`-p` values that change no outcome: the cache only matters to --lf/--ff, and the harness adds it anyway."""
WHOLE = "."
"""The target of a reproduction that names no tests when the suite names none either: every test."""
MAX_NODES = 50


def targets_in(repro: str | None, suite: str) -> list[str] | None:
    """The reproduction's targets (files, node ids) when the suite runs them the same way, else None."""
    r, s = _pytest(repro or ""), _pytest(suite)
    if r is None or s is None or r[0] != s[0] or _capture(r[1]) != _capture(s[1]):
        return None
    targets, suite_paths = r[2], s[2]
    if not targets:
        return None if suite_paths else [WHOLE]
    if any(t.startswith("/") or ".." in t.split("/") for t in targets):
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


def narrowed(command: str, tests: set[str]) -> str | None:
    """`command` run on `tests` (node ids) instead of its own targets, when that is narrower; else None."""
    parsed = _pytest(command)
    if parsed is None or not tests or len(tests) > MAX_NODES or not all("::" in t for t in tests):
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
    """(options, targets); None for the options when one may change which tests run or how they end."""
    opts: list[str] = []
    targets: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "-p":
            value = next(rest, "")
            if value not in PLUGINS_OFF:
                return None, []
            opts += [arg, value]
        elif not arg.startswith("-"):
            targets.append(arg)
        elif arg in FLAGS or arg in CAPTURE or arg.startswith(PRINTING) or arg.removeprefix("-p") in PLUGINS_OFF:
            opts.append(arg)
        else:
            return None, []
    return opts, targets


def _capture(opts: list[str]) -> set[str]:
    return {CAPTURE[o] for o in opts if o in CAPTURE}


def _under(path: str, roots: list[str]) -> bool:
    clean = [root.rstrip("/").removeprefix("./") for root in roots]
    return any(root in ("", ".") or path == root or path.startswith(root + "/") for root in clean)


def _names(target: str, test_id: str) -> bool:
    """Whether the target (a directory, a file, a node id, or WHOLE) names the test."""
    prefixes = (target + "::", target + "[", target.rstrip("/") + "/")
    return target == WHOLE or test_id == target or test_id.startswith(prefixes)
