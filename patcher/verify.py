"""Verification: does the diff make the reproduction pass, with no regressions, in boxes the agent never saw?

run_baseline() runs the reproduction and the suite on the pristine repo before any agent time is spent.
verify() checks the integrity policy, applies the diff with host `git apply` to a copy of the staging
tree, and runs everything again in a fresh box. A test that fails and then passes on a rerun is flaky:
it is reported and never counted as a pass. If it is flaky on the base code too, it is left out of
pass-to-pass; if only the diff made it flaky, it is a regression.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from .errors import BadInput
from .intake import StagedRepo, _git
from .policy import check_diff, tests_only
from .sandbox import Sandbox
from .testruns import TestRun, command_kind, pytest_prefix, run_tests

OpenBox = Callable[[StagedRepo], AbstractContextManager[Sandbox]]
RERUNS = 2
NO_TESTS_COLLECTED = 5


@dataclass
class Baseline:
    repro: TestRun | None
    suite: TestRun
    exception_matched: bool

    @property
    def reproduced(self) -> bool:
        return self.repro is not None and self.repro.outcome == "failed" and self.exception_matched

    @property
    def suite_usable(self) -> bool:
        """Whether the suite's result on the base is known (pytest's "no tests collected" counts: none to keep)."""
        return self.suite.reported or (self.suite.exit_code == NO_TESTS_COLLECTED and not self.suite.timed_out)


@dataclass
class Verification:
    status: str
    reason: str
    message: str
    reproduction: dict[str, Any]
    files_changed: list[str] = field(default_factory=list)
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: dict[str, Any] = field(default_factory=lambda: {"total": 0, "regressions": []})
    flaky: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    runs: list[tuple[str, TestRun]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"reproduction": self.reproduction, "fail_to_pass": self.fail_to_pass,
                "pass_to_pass": self.pass_to_pass, "flaky": self.flaky, "duration_s": round(self.duration_s, 3)}


def run_baseline(staged: StagedRepo, repro: str | None, exc_type: str | None, open_box: OpenBox,
                 suite_command: str) -> Baseline:
    """The reproduction (which must fail with the traceback's exception) and the suite, on the pristine repo."""
    with open_box(staged) as box:
        first = run_tests(box, repro, "base-repro") if repro else None
        suite = run_tests(box, suite_command, "base-suite")
    return Baseline(first, suite, first is not None and first.outcome == "failed" and first.shows(exc_type))


def apply_diff(staged: StagedRepo, diff: str) -> tuple[StagedRepo, list[str]]:
    """A copy of the staging tree with the diff applied by host git (which refuses paths out of the tree),
    and the paths git actually changed."""
    root = Path(tempfile.mkdtemp(prefix="patcher-verify-"))
    dest = root / "repo"
    try:
        shutil.copytree(staged.path, dest, symlinks=True)
        patch = root / "patch.diff"
        patch.write_text(diff, encoding="utf-8")
        for check in (["--check"], []):
            _git(dest, "apply", *check, "--whitespace=nowarn", str(patch))
        status = _git(dest, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    except git.GitCommandError as e:
        shutil.rmtree(root, ignore_errors=True)
        last = (e.stderr or str(e)).strip().splitlines()[-1:] or [""]
        raise BadInput(f"the patch does not apply to the base: {last[0].strip()}") from e
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    changed = [entry[3:] for entry in status.split("\0") if entry]
    files = sorted(p for p in set(staged.files) | set(changed) if os.path.lexists(dest / p))
    return StagedRepo(dest, staged.base_commit, staged.source_commit, staged.dirty, files), changed


def verify(staged: StagedRepo, diff: str, base: Baseline, repro: str | None, exc_type: str | None,
           open_box: OpenBox, suite_command: str) -> Verification:
    started = time.monotonic()
    out = _verify(staged, diff, base, repro, exc_type, open_box, suite_command)
    out.duration_s = time.monotonic() - started
    return out


def _verify(staged: StagedRepo, diff: str, base: Baseline, repro: str | None, exc_type: str | None,
            open_box: OpenBox, suite_command: str) -> Verification:
    report = {"command": repro, "before": base.repro.outcome if base.repro else "not_run", "after": "not_run"}

    def ended(reason: str, message: str, **kw: Any) -> Verification:
        status = "verified" if reason == "verified" else "not_verified"
        return Verification(status, reason, message, report, **kw)

    policy = check_diff(diff, staged.files)
    if not policy.ok:
        return ended("policy_violation", "the diff breaks the integrity policy: " + "; ".join(policy.violations[:5]),
                     files_changed=policy.files_changed)
    if not base.suite_usable:
        return ended("tests_failed", f"the test suite `{suite_command}` gave no usable result on the base code "
                     f"({_describe(base.suite)}), so regressions cannot be ruled out")
    runs: list[tuple[str, TestRun]] = []
    before = base.repro
    if repro is None:  # the agent was asked to write the reproduction: it must fail on the base code
        if not policy.added_tests:
            return ended("not_reproduced", "no reproduction: no --test was given, the traceback names no test in "
                         "the repo, and the diff adds no test file", files_changed=policy.files_changed)
        repro = "python -m pytest -q " + shlex.join(policy.added_tests)
        report["command"] = repro
        probe, _ = apply_diff(staged, tests_only(diff))
        try:
            with open_box(probe) as box:
                before = run_tests(box, repro, "base-added-tests")
        finally:
            probe.cleanup()
        runs.append(("base-added-tests", before))
        report["before"] = before.outcome
        if before.outcome != "failed" or not before.shows(exc_type):
            return ended("not_reproduced", f"the tests the diff adds do not fail on the base code"
                         f"{' with ' + exc_type if exc_type else ''} ({_describe(before)}); they prove nothing",
                         files_changed=policy.files_changed, runs=runs)
    assert before is not None
    patched, applied = apply_diff(staged, diff)
    changed = set(applied)
    try:
        if not changed <= set(policy.files_changed):
            return ended("policy_violation", "git apply changed files the diff does not name: "
                         + ", ".join(sorted(changed - set(policy.files_changed))[:5]), runs=runs)
        with open_box(patched) as box:
            after = run_tests(box, repro, "repro")
            runs.append(("repro", after))
            if after.outcome == "failed":
                again = run_tests(box, repro, "repro-rerun")
                runs.append(("repro-rerun", again))
                if again.outcome == "passed":
                    report["after"] = "flaky"
                    return ended("tests_failed", f"the reproduction `{repro}` is flaky with the diff (failed, then "
                                 "passed); a flaky pass is not a pass", files_changed=policy.files_changed,
                                 flaky=[repro], runs=runs)
            report["after"] = after.outcome
            if after.outcome != "passed":
                return ended("tests_failed", f"the reproduction `{repro}` still does not pass with the diff "
                             f"({_describe(after)})", files_changed=policy.files_changed, runs=runs)
            unproven = sorted(before.failed - after.passed)
            if unproven:
                return ended("tests_failed", "tests that failed on the base did not pass with the diff: "
                             + ", ".join(unproven[:5]), files_changed=policy.files_changed, runs=runs)
            suite = run_tests(box, suite_command, "suite")
            runs.append(("suite", suite))
            if not (suite.reported or base.suite.passed == set()):
                return ended("tests_failed", f"the test suite gave no usable result with the diff "
                             f"({_describe(suite)})", files_changed=policy.files_changed, runs=runs)
            regressions, flaky = _rerun(box, suite_command, sorted(base.suite.passed - suite.passed), runs)
        if flaky:
            regressions, flaky = _flaky_on_base(staged, open_box, suite_command, regressions, flaky, runs)
        p2p = {"total": len(base.suite.passed) - len(flaky), "regressions": regressions}
        common = {"files_changed": policy.files_changed, "fail_to_pass": sorted(before.failed & after.passed),
                  "pass_to_pass": p2p, "flaky": flaky, "runs": runs}
        if regressions:
            return ended("regression", f"{len(regressions)} test(s) that passed on the base fail with the diff: "
                         + ", ".join(regressions[:5]), **common)
        note = f"; {len(flaky)} test(s) flaky on the base too were left out" if flaky else ""
        return ended("verified", f"`{repro}` failed on the base and passes with the diff; "
                     f"{p2p['total']} test(s) that passed before still pass{note}", **common)
    finally:
        patched.cleanup()


def _rerun(box: Sandbox, suite_command: str, failing: list[str], runs: list[tuple[str, TestRun]]
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


def _flaky_on_base(staged: StagedRepo, open_box: OpenBox, suite_command: str, regressions: list[str],
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


def _describe(run: TestRun) -> str:
    if run.timed_out:
        return "timed out"
    if run.exit_code is None:
        return run.output_tail.strip().splitlines()[-1][:200] if run.output_tail.strip() else "did not run"
    if not run.reported:
        return f"exit code {run.exit_code} with no test report, so no test is known to have run"
    return f"exit code {run.exit_code}, {len(run.passed)} passed, {len(run.failed)} failed"
