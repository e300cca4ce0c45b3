"""Which context the second judge judges a fail-to-pass test in (judges/asked.py `_judged_in`): where it fails on
the base outside pytest as pytest saw it fail. Records written out as the image's runner reports them; the real
runs are in test_second.py."""

from __future__ import annotations

from typing import Any

from patcher.verify.job import Job
from patcher.verify.judges.asked import Answers, _judged_in
from patcher.verify.stream import Failure, Stream
from patcher.verify.testruns import TestRun

SITE = ("rates.py", "rate")
CRASH = Failure("KeyError", [("tests/test_rates.py", "test_unknown"), SITE])
OWN = Failure("AssertionError", [("tests/test_rates.py", "test_zero_rate")])


def _job(exc: str | None = "KeyError") -> Job:
    return Job(None, None, "python -m pytest -q", "python -m pytest -q tests/test_rates.py", exc,  # type: ignore[arg-type]
               SITE if exc else None)


def _before(failures: dict[str, list[Failure]]) -> TestRun:
    return TestRun("pytest", 1, False, True, failed=set(failures),
                   stream=Stream(failed=set(failures), failures=failures))


def _bases(rec: dict[str, Any]) -> dict[str, Answers]:
    return {name: Answers(by_id={"t0": rec}) for name in ("bare", "dressed")}


def _failed(exc: str, *frames: tuple[str, str]) -> dict[str, Any]:
    return {"outcome": "failed", "exc": exc, "frames": [list(f) for f in frames], "message": "m"}


def test_the_traceback_s_test_is_judged_where_it_crashes_as_the_traceback_does() -> None:
    before = _before({"tests/test_rates.py::test_unknown": [CRASH]})
    test = "tests/test_rates.py::test_unknown"
    assert _judged_in("t0", test, _bases(_failed("KeyError", SITE)), _job(), before) == "bare"
    assert _judged_in("t0", test, _bases(_failed("KeyError", ("other.py", "f"))), _job(), before) is None, \
        "the crash's type elsewhere is another failure"
    assert _judged_in("t0", test, _bases(_failed("AssertionError")), _job(), before) is None


def test_another_fail_to_pass_test_is_judged_where_it_fails_as_pytest_saw_it_fail() -> None:
    """A second test that failed on the base with an assertion of its own (or through a test function of another
    name than the traceback's) is held to what pytest saw it fail with, not to the traceback's crash."""
    test = "tests/test_rates.py::test_zero_rate"
    before = _before({"tests/test_rates.py::test_unknown": [CRASH], test: [OWN]})
    assert _judged_in("t0", test, _bases(_failed("AssertionError", OWN.frames[0])), _job(), before) == "bare"
    assert _judged_in("t0", test, _bases(_failed("KeyError", SITE)), _job(), before) is None, \
        "failing outside pytest otherwise than under it"
    assert _judged_in("t0", test, _bases({"outcome": "passed"}), _job(), before) is None
    assert _judged_in("t0", test, _bases(_failed("AssertionError")), _job(None), before) == "bare"
