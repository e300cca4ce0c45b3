"""What verification produces: the baseline on the untouched code, and the verdict on a diff."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from patcher.result import Reason
from patcher.verify.testruns import TestRun

NO_TESTS_COLLECTED = 5


@dataclass
class Baseline:
    repro: TestRun | None
    suite: TestRun
    exception_matched: bool
    installed: list[str] = field(default_factory=list)
    """Top-level import names of the packages in the box: a new repo module may not take one."""

    @property
    def reproduced(self) -> bool:
        return self.repro is not None and self.repro.outcome == "failed" and self.exception_matched

    @property
    def test_files(self) -> frozenset[str]:
        """Files the base suite ran as pytest test modules (whatever `python_files` says): tests too."""
        return frozenset(t.split("::")[0] for t in self.suite.passed | self.suite.failed if ".py" in t)

    @property
    def doctest_files(self) -> frozenset[str]:
        """Source modules the base suite collected only for their doctests: their code may change, their
        doctest examples may not (verify/doctests.py)."""
        stream = self.suite.stream
        if stream is None:
            return frozenset()
        ran = stream.passed | stream.failed | stream.skipped  # a skipped test function is a test too
        by_file: dict[str, set[str]] = {}
        for t in ran:
            by_file.setdefault(t.split("::")[0], set()).add(t)
        return frozenset(f for f, tests in by_file.items() if f.endswith(".py") and tests <= stream.doctests)

    @property
    def suite_usable(self) -> bool:
        """Whether the suite's result on the base is known (pytest's "no tests collected" counts: none to keep)."""
        return self.suite.reported or (self.suite.exit_code == NO_TESTS_COLLECTED and not self.suite.timed_out)


@dataclass
class Verification:
    status: str
    reason: Reason
    message: str
    reproduction: dict[str, Any]
    files_changed: list[str] = field(default_factory=list)
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: dict[str, Any] = field(default_factory=lambda: {"total": 0, "regressions": []})
    flaky: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    runs: list[tuple[str, TestRun]] = field(default_factory=list)
    suspicious: list[str] = field(default_factory=list)
    """Quoted added lines that probe the test environment (reason suspicious_diff)."""
    warnings: list[str] = field(default_factory=list)
    """Review hints on the diff that do not decide the verdict (verify/hints.py), for the result's `warnings`."""

    def as_json(self) -> dict[str, Any]:
        out = {"reproduction": self.reproduction, "fail_to_pass": self.fail_to_pass,
               "pass_to_pass": self.pass_to_pass, "flaky": self.flaky, "duration_s": round(self.duration_s, 3)}
        if self.suspicious:
            out["suspicious_lines"] = self.suspicious
        return out
