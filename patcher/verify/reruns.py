"""Reruns: a test that fails and then passes is flaky, never a pass; flaky on the base too, it is left out."""

from __future__ import annotations

import shlex

from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox, Sandbox
from patcher.verify.testruns import TestRun, command_kind, pytest_prefix, run_tests

RERUNS = 2


def rerun_failing(box: Sandbox, suite_command: str, failing: list[str], runs: list[tuple[str, TestRun]]
           ) -> tuple[list[str], list[str]]:
    """(still failing, flaky): pytest reruns the failing tests by node id; other runners are not rerun."""
    if not failing or command_kind(shlex.split(suite_command)) != "pytest":
        return failing, []
    left, flaky = list(failing), []
    for n in range(RERUNS):
        run = run_tests(box, shlex.join([*pytest_prefix(suite_command), "-q", *left]), f"suite-rerun-{n + 1}")
        runs.append((f"suite-rerun-{n + 1}", run))
        flaky += [t for t in left if t in run.passed]
        left = [t for t in left if t not in run.passed]
        if not left:
            break
    return left, sorted(flaky)


def flaky_on_base(staged: StagedRepo, open_box: OpenBox, suite_command: str, regressions: list[str],
                   flaky: list[str], runs: list[tuple[str, TestRun]]) -> tuple[list[str], list[str]]:
    """Tests flaky with the diff: ones that never fail on the base in RERUNS + 1 runs are the diff's doing."""
    seen_failing: set[str] = set()
    with open_box(staged) as box:
        for n in range(RERUNS + 1):
            run = run_tests(box, shlex.join([*pytest_prefix(suite_command), "-q", *flaky]), f"base-flaky-{n + 1}")
            runs.append((f"base-flaky-{n + 1}", run))
            seen_failing |= set(flaky) - run.passed
    made_flaky = [t for t in flaky if t not in seen_failing]
    return sorted(regressions + made_flaky), sorted(seen_failing & set(flaky))
