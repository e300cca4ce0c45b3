"""Harness pytest plugin (loaded with `-p patcher_evidence` from the image, never from the repo).

One record per test phase as it ends (node id, phase, outcome, and for a failure the exception type and
the repository frames it went through), one per failed collection, and an end record with pytest's exit
status. See patcher_channel for how the records leave the process.
"""

import patcher_channel
import pytest
from patcher_channel import channel, frames, type_name

_raised: dict = {}
_doctests: set = set()
"""Node ids of doctest items: the host lets the code of a module collected only for its doctests change."""
_depth = [0]
"""Sessions running in this process: a test that runs pytest in-process (pytester) nests one, whose tests
are not the outer run's and must not be counted as its outcomes."""


def pytest_sessionstart(session):  # type: ignore[no-untyped-def]
    _depth[0] += 1


def _outer() -> bool:
    return _depth[0] <= 1


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):  # type: ignore[no-untyped-def]
    # The held-out asker's hook, set as the test's call begins (never while modules are imported or fixtures set
    # up, as the recording), and again where a tracer started with the session (pytest-cov's) replaced it.
    if patcher_channel.asker is not None:
        patcher_channel.asker.rearm()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    # The phase's exception itself (pytest's unittest support fills call.excinfo in its own hook).
    yield
    if type(item).__name__ == "DoctestItem":
        _doctests.add(item.nodeid)
    info = call.excinfo
    if info is not None:
        _raised[(item.nodeid, call.when)] = {"exc": type_name(info.type), "frames": frames(info.tb)}


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    raised = _raised.pop((report.nodeid, report.when), {}) if report.failed else {}
    if _outer():
        kind = {"doctest": True} if report.nodeid in _doctests else {}
        channel.emit({"k": "test", "id": report.nodeid, "when": report.when, "outcome": report.outcome, **raised,
                      **kind})


def pytest_collectreport(report):  # type: ignore[no-untyped-def]
    if not report.passed and _outer():  # a module-level skip is a test in the JUnit report too
        channel.emit({"k": "test", "id": report.nodeid, "when": "collect", "outcome": report.outcome})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    _depth[0] -= 1
    if _depth[0] == 0:
        channel.emit({"k": "end", "exit": int(exitstatus)})
