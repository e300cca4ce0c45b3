"""One candidate's test run: warm (forked in the box from an interpreter that has pytest and the repo's
dependencies imported, sandbox/forks.py) when the command is pytest's, cold (`run_tests`) otherwise.

A warm run's outcomes are written by the code under test without a signature, so they only choose a
candidate; the chosen diff's verification runs from scratch with every evidence rule. A box whose warm
checks keep failing (an old image, a parent that cannot start) is checked cold from then on.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass, field

from patcher.errors import SandboxError
from patcher.sandbox import Sandbox
from patcher.verify import command_kind, run_tests
from sandbox.protocol import CheckRequest

_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (\S+ - .+)$", re.M)
_E_LINE = re.compile(r"^E\s+(\S.*)$", re.M)
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Failure)\b(?::.*)?)$", re.M)
WARM_START_S = 60.0
"""Extra deadline for the first warm check, which also imports pytest and the dependencies."""
MAX_WARM_FAILURES = 2
PREWARM_DEADLINE_S = 10.0


@dataclass
class Checked:
    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    ok: bool = False
    """Every selected test ran and passed (the reproduction's criterion)."""
    reported: bool = False
    """The run said which tests passed (the suite's criterion reads `passed` only then)."""
    first_failure: str = ""
    """The first line that says why a test failed (pytest's `E` line or summary, an exception line), or ""."""


@dataclass
class Checker:
    box: Sandbox
    warm: bool = True
    warm_runs: int = 0
    cold_runs: int = 0
    failures: int = 0

    def prewarm(self, command: str) -> None:
        """Start the box's warm interpreter for `command` without waiting for it (its imports then overlap
        whatever the host does next, such as the coverage run); no harm if it fails, the check falls back."""
        if self.warm and command_kind(shlex.split(command)) == "pytest":
            with contextlib.suppress(SandboxError):
                self.box.call(CheckRequest(command=command, start=True), PREWARM_DEADLINE_S)

    def run(self, command: str, name: str, deadline_s: float) -> Checked:
        if self.warm and self.failures < MAX_WARM_FAILURES and command_kind(shlex.split(command)) == "pytest":
            extra = WARM_START_S if self.warm_runs == 0 else 0.0
            result = self.box.call(CheckRequest(command=command), deadline_s + extra)
            if not result.is_error or result.timed_out:
                self.warm_runs += 1
                passed, failed = set(result.data.get("passed") or ()), set(result.data.get("failed") or ())
                code = result.exit_code
                return Checked(passed, failed, code == 0 and bool(passed) and not failed and not result.timed_out,
                               code in (0, 1) and not result.timed_out and bool(passed | failed),
                               first_failure(result.output) if failed else "")
            self.failures += 1
        self.cold_runs += 1
        run = run_tests(self.box, command, name, deadline_s)
        return Checked(run.passed, run.failed, run.outcome == "passed", run.reported,
                       first_failure(run.failure_text or run.output_tail) if run.failed else "")


def first_failure(output: str) -> str:
    """The first line of a test run's output that says why a test failed: pytest's short summary
    (`FAILED id - AssertionError: …`), else its first `E   ` line, else an exception line (unittest's)."""
    for pattern in (_SUMMARY, _E_LINE, _EXCEPTION):
        found = pattern.search(output)
        if found:
            return " ".join(found.group(1).split())[:300]
    return ""
