"""One run answers two commands: a reproduction contained in the suite is read off the suite's run.

Baseline and verification run through the real tool server (LocalSandbox) and its harness stream. The
shortcut may only save runs, never decide differently: a reproduction the suite's run does not confirm
is run on its own, and a fix that passes alone but fails within the suite is flaky, not verified.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.intake import stage_repo
from patcher.sandbox import LocalSandbox
from patcher.verify import Job, TestRun, run_baseline, verify
from patcher.verify.contain import derived, narrowed, targets_in
from patcher.verify.stream import Stream
from tests.support import cheats as c
from tests.support.helpers import make_repo

NODE = "tests/test_calc.py::test_zero"


@pytest.mark.parametrize(("repro", "suite", "targets"), [
    (c.REPRO, c.SUITE, [NODE]),
    ("pytest -q tests/test_calc.py", "pytest -q tests", ["tests/test_calc.py"]),
    ("python -m pytest -q tests/t.py::test_a[1] tests/u.py", "python -m pytest -q ./",
     ["tests/t.py::test_a[1]", "tests/u.py"]),
    ("python -m pytest --tb=short tests/t.py", "python -m pytest --tb=short", ["tests/t.py"]),
    (c.REPRO, "python -m pytest", [NODE]),                   # options that change only what is printed may differ
    ("python -m pytest -p no:cacheprovider -rA --tb=line -v tests", "python -m pytest -q", ["tests"]),
    ("python -m pytest -pno:cacheprovider -q", c.SUITE, ["."]),  # the suite itself, spelled another way
    ("pytest -s -q tests/t.py", "pytest --capture=no", ["tests/t.py"]),
])
def test_a_reproduction_spelled_like_the_suite_is_contained(repro: str, suite: str, targets: list[str]) -> None:
    assert targets_in(repro, suite) == targets


@pytest.mark.parametrize(("repro", "suite"), [
    (c.REPRO, "pytest -q"),                                  # another spelling of pytest
    (c.REPRO, "python -m pytest -q -x"),                     # -x may stop before the reproduction's tests
    (c.REPRO, "python -m pytest -s"),                        # capture differs: a test may end differently
    ("python -m pytest -q -k zero tests/test_calc.py", "python -m pytest -q -k zero"),  # an option with a value
    ("python -m pytest -p xdist tests/t.py", c.SUITE),         # a plugin that may change outcomes
    ("python -m pytest -p no:randomly tests/t.py", c.SUITE),   # nor one that changes the order
    (c.REPRO, "python -m pytest -q other"),                  # the suite runs elsewhere
    ("python -m pytest -q", "python -m pytest -q tests"),    # the reproduction runs more than the suite
    ("python -m pytest -q ../elsewhere/t.py", c.SUITE),      # outside the repo
    ("python -m unittest tests.test_calc", "python -m unittest"),
    ("python -c 'import calc'", c.SUITE),
    ("python -m pytest -q 'tests/unclosed", c.SUITE),
    (None, c.SUITE),
])
def test_anything_else_is_not_contained(repro: str | None, suite: str) -> None:
    assert targets_in(repro, suite) is None


def _suite_run(passed: set[str], failed: set[str], reported: bool = True, tampered: str = "") -> TestRun:
    stream = Stream(passed=passed, failed=failed)
    return TestRun(c.SUITE, 1 if failed else 0, False, reported, passed, failed, stream=stream, tampered=tampered)


def test_the_derived_run_holds_only_the_reproductions_tests() -> None:
    run = _suite_run({"tests/test_calc.py::test_add"}, {NODE, "tests/test_other.py::test_x"})
    got = derived(run, c.REPRO, [NODE])
    assert got is not None
    assert (got.command, got.failed, got.passed, got.exit_code, got.answered_by) == (c.REPRO, {NODE}, set(), 1, c.SUITE)
    fixed = derived(_suite_run({NODE}, {"tests/test_other.py::test_x"}), c.REPRO, [NODE])
    assert fixed is not None and (fixed.outcome, fixed.exit_code) == ("passed", 0)


@pytest.mark.parametrize("run", [
    _suite_run({"tests/test_calc.py::test_add"}, set()),            # the target did not run
    _suite_run({NODE}, set(), tampered="stream and report disagree"),
    TestRun(c.SUITE, 0, False, True, {NODE}, set()),                  # no stream: nothing is known
    _suite_run({NODE}, set(), reported=False),
], ids=["not run", "tampered", "no stream", "not reported"])
def test_a_suite_run_that_cannot_answer_gives_none(run: TestRun) -> None:
    assert derived(run, c.REPRO, [NODE]) is None


def _job(tmp_path: Path, files: dict[str, str]) -> Job:
    return Job(stage_repo(str(make_repo(tmp_path / "r", files))), LocalSandbox, c.SUITE, c.REPRO, c.EXC, c.SITE)


def test_one_base_run_answers_the_reproduction_and_the_suite(tmp_path: Path) -> None:
    job = _job(tmp_path, c.FILES)
    base = run_baseline(job)
    assert base.reproduced and base.repro is not None and base.repro.answered_by == c.SUITE
    assert base.repro.failed == {NODE} and "tests/test_calc.py::test_add" in base.suite.passed
    ver = verify(job.with_baseline(base), c.make_diff(tmp_path / "r", tmp_path / "w", {"calc.py": c.FIXED}))
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    assert [name for name, _ in ver.runs] == ["repro", "repro-rerun-1", "suite"]  # three passes, two runs alone
    job.staged.cleanup()


def test_a_reproduction_that_is_the_suite_spelled_another_way_runs_once_on_the_base(tmp_path: Path) -> None:
    repro = "python -m pytest -p no:cacheprovider -rA --tb=short"
    job = Job(stage_repo(str(make_repo(tmp_path / "r", c.FILES))), LocalSandbox, c.SUITE, repro, c.EXC, c.SITE)
    base = run_baseline(job)
    assert base.reproduced and base.repro is not None and base.repro.answered_by == c.SUITE
    assert base.repro.failed == {NODE} and base.repro.passed == base.suite.passed
    ver = verify(job.with_baseline(base), c.make_diff(tmp_path / "r", tmp_path / "w", {"calc.py": c.FIXED}))
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    assert [name for name, _ in ver.runs] == ["repro", "repro-rerun-1", "suite"]
    job.staged.cleanup()


# An earlier test turns the guard on: within the suite, test_zero passes on the base; alone, it crashes.
GUARDED = {"calc.py": "GUARD = False\n\n\ndef safe_div(a, b):\n    if GUARD and not b:\n        return 0\n"
                      "    return a / b\n\n\ndef add(a, b):\n    return a + b\n",
           "tests/test_a_first.py": "import calc\n\n\ndef test_first():\n    calc.GUARD = True\n",
           "tests/test_calc.py": c.TESTS}


def test_a_reproduction_the_suite_run_does_not_confirm_runs_on_its_own(tmp_path: Path) -> None:
    job = _job(tmp_path, GUARDED)
    base = run_baseline(job)
    assert NODE in base.suite.passed
    assert base.reproduced and base.repro is not None and base.repro.answered_by == ""
    job.staged.cleanup()


def test_a_fix_that_passes_alone_but_fails_within_the_suite_is_flaky(tmp_path: Path) -> None:
    files = {**c.FILES, "tests/test_a_first.py": "import calc\n\n\ndef test_first():\n    calc.TURNED = True\n"}
    job = _job(tmp_path, files)
    base = run_baseline(job)
    assert base.reproduced
    alone_only = ("def safe_div(a, b):\n    if not b and not TURNED:\n        return 0\n    return a / b\n\n\n"
                  "def add(a, b):\n    return a + b\n\n\nTURNED = False\n")
    ver = verify(job.with_baseline(base), c.make_diff(tmp_path / "r", tmp_path / "w", {"calc.py": alone_only}))
    assert (ver.status, ver.reason) == ("not_verified", "tests_failed"), ver.message
    assert "within the suite" in ver.message and ver.reproduction["after"] == "flaky"
    job.staged.cleanup()


@pytest.mark.parametrize(("command", "tests", "fast"), [
    ("python -m pytest -q tests", {NODE}, f"python -m pytest -q {NODE}"),
    ("pytest tests/test_calc.py", {NODE, "tests/test_calc.py::test_add"},
     f"pytest tests/test_calc.py::test_add {NODE}"),
    (c.REPRO, {NODE}, None),                                          # already just those tests
    ("python -m pytest -q tests/other.py", {NODE}, None),             # they are not the command's
    ("python -m pytest -q -k zero tests", {NODE}, None),              # an option this module does not know
    ("python -m unittest tests.test_calc", {NODE}, None),
    ("python -m pytest -q tests", {"tests/test_calc.py"}, None),       # not node ids
    ("python -m pytest -q tests", set(), None),
])
def test_candidate_checks_run_the_failing_tests_by_node_id(command: str, tests: set[str], fast: str | None) -> None:
    assert narrowed(command, tests) == fast


_TAIL = "\n\ndef add(a, b):\n    return a + b\n"
# Fixes that pass when the reproduction runs alone and fail when the suite runs it (after test_first), each
# spelled as hostile code would: plain module state, sys.modules through names built from strings, the
# check hidden in another file the diff adds (with getattr on a joined name, or plainly). The probe rules
# stop the string-built spellings (suspicious_diff); the plain ones reach the suite's run (tests_failed).
_BY_STRING = ("def safe_div(a, b):\n    mods = getattr(__import__('s' + 'ys'), 'mod' + 'ules')\n"
              "    if not b and not any('a_fi' + 'rst' in m for m in mods):\n        return 0\n    return a / b")
_ELSEWHERE = "import calc as _c\n\n\ndef quiet():\n    return not getattr(_c, 'TUR' + 'NED', False)\n"
IN_SUITE_ONLY_FAILS = {
    "module state": {"calc.py": "def safe_div(a, b):\n    if not b and not TURNED:\n        return 0\n"
                                "    return a / b" + _TAIL + "\n\nTURNED = False\n"},
    "sys.modules by string": {"calc.py": _BY_STRING + _TAIL},
    "another file": {"calc.py": "from guard import quiet\n\n\ndef safe_div(a, b):\n    if not b and quiet():\n"
                                "        return 0\n    return a / b" + _TAIL, "guard.py": _ELSEWHERE},
    "plain, in another file": {"calc.py": "def safe_div(a, b):\n    from guard import quiet\n\n"
                                          "    if not b and quiet():\n        return 0\n    return a / b" + _TAIL,
                               "guard.py": "import calc\n\n\ndef quiet():\n    return not hasattr(calc, 'TURNED')\n"},
}


@pytest.mark.parametrize("edits", IN_SUITE_ONLY_FAILS.values(), ids=IN_SUITE_ONLY_FAILS.keys())
def test_fixes_that_fail_only_within_the_suite_are_never_verified(tmp_path: Path, edits: dict[str, str]) -> None:
    files = {**c.FILES, "tests/test_a_first.py": "import calc\n\n\ndef test_first():\n    calc.TURNED = True\n"}
    job = _job(tmp_path, files)
    base = run_baseline(job)
    ver = verify(job.with_baseline(base), c.make_diff(tmp_path / "r", tmp_path / "w", edits))
    job.staged.cleanup()
    assert ver.status == "not_verified" and ver.reason in ("tests_failed", "suspicious_diff"), ver.message
