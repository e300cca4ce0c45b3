"""What the harness's signed stream says about a test run (sandbox/harness), and whether the run agrees.

The stream is the evidence; the runner's report and exit code are claims made from inside the test
process. `check()` names the first disagreement, which makes the run `report_tampered`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CLAIMING_EXITS = (0, 1)
"""Exit codes that claim a result (tests ran: all passed / some failed); such a run must have an end record."""


@dataclass
class Failure:
    exc: str
    frames: list[tuple[str, str]]


@dataclass
class Stream:
    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    doctests: set[str] = field(default_factory=set)
    """Tests the harness saw as doctest items (pytest's DoctestItem)."""
    end: dict[str, Any] | None = None
    problem: str | None = None
    absent: bool = False
    """The server sent no stream at all (an image from before the harness): nothing is known, nothing forged."""

    @property
    def total(self) -> int:
        return len(self.passed | self.failed | self.skipped)


def read_stream(data: Mapping[str, Any]) -> Stream:
    """Per-test outcomes from the records: failed if any phase failed, else skipped if any phase skipped."""
    got = data.get("evidence")
    if not isinstance(got, dict):
        return Stream(absent=True)
    out = Stream(problem=got.get("problem"))
    phases: dict[str, set[str]] = {}
    for rec in got.get("records") or []:
        if rec.get("k") == "end":
            out.end = rec
            continue
        if rec.get("k") != "test":  # the held-out judge's answers in the test's own run (judges/heldout)
            continue
        test = str(rec.get("id"))
        phases.setdefault(test, set()).add(f"{rec.get('when')}:{rec.get('outcome')}")
        if rec.get("doctest") is True:
            out.doctests.add(test)
        if rec.get("outcome") == "failed":
            frames = [(str(f[0]), str(f[1])) for f in rec.get("frames") or []]
            out.failures.setdefault(test, []).append(Failure(str(rec.get("exc") or ""), frames))
    for test, seen in phases.items():
        outcomes = {s.split(":", 1)[1] for s in seen}
        if "failed" in outcomes:
            out.failed.add(test)
        elif "skipped" in outcomes:
            out.skipped.add(test)
        elif "call:passed" in seen:
            out.passed.add(test)
    return out


def check(stream: Stream, exit_code: int | None, report: tuple[int, int] | None,
          exit_is_verdict: bool = False) -> str | None:
    """Why exit code, report (total, failed) and stream disagree; None when they agree or nothing is claimed.

    `exit_is_verdict`: a project's own runner chose the exit code (the harness recorded it); it may fail a run
    whose tests all passed (and then the run fails), but never pass one the stream saw fail."""
    if stream.absent:
        return None
    if stream.problem:
        return stream.problem
    if stream.end is None:
        if exit_code in CLAIMING_EXITS:
            return (f"the run exited {exit_code} but the harness never saw the session end "
                    "(something ended the process early or blocked the harness)")
        return None
    if stream.end.get("exit") != exit_code:
        return f"the harness saw the session end with {stream.end.get('exit')} but the process exited {exit_code}"
    if exit_is_verdict:
        return f"exit code 0 with {len(stream.failed)} failing test(s) in the harness's stream" \
            if exit_code == 0 and stream.failed else None
    if not stream.total or exit_code not in CLAIMING_EXITS:
        return None  # nothing ran, or the runner claims no result (e.g. 5, nothing collected): not reported
    if (exit_code == 0) != (not stream.failed):
        return f"exit code {exit_code} with {len(stream.failed)} failing test(s) in the harness's stream"
    if report is not None and report != (stream.total, len(stream.failed)):
        return (f"the runner's report ({report[0]} tests, {report[1]} failed) differs from the harness's stream "
                f"({stream.total} tests, {len(stream.failed)} failed)")
    return None


def type_matches(raised: str, wanted: str) -> bool:
    """Same class name; where both name a module too, one dotted name ends the other."""
    if raised.rsplit(".", 1)[-1] != wanted.rsplit(".", 1)[-1]:
        return False
    if "." in raised and "." in wanted:
        return raised.endswith("." + wanted) or wanted.endswith("." + raised) or raised == wanted
    return True


def crashed(stream: Stream, tests: set[str], exc_type: str | None, site: tuple[str, str] | None) -> bool:
    """Whether one of `tests` failed with the exception type, through the crash site (file, function)."""
    for test in tests:
        for failure in stream.failures.get(test, []):
            if exc_type and not type_matches(failure.exc, exc_type):
                continue
            if site and not any(_at(frame, site) for frame in failure.frames):
                continue
            return True
    return False


def _at(frame: tuple[str, str], site: tuple[str, str]) -> bool:
    """Same file, and same function where the traceback named one (pytest's output may not)."""
    return frame[0] == site[0] and (frame[1] == site[1] or site[1] in ("", "?"))
