"""Verification: does the diff make the reproduction pass, with no regressions, in boxes the agent never saw?

run_baseline() runs the reproduction and the suite on the pristine repo before any agent time is spent.
verify() checks the integrity policy, applies the diff with host `git apply` to a copy of the staging
tree, and runs everything again in a fresh box. A test that fails and then passes on a rerun is flaky:
it is reported and never counted as a pass. If it is flaky on the base code too, it is left out of
pass-to-pass; if only the diff made it flaky, it is a regression.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from patcher.errors import BadInput
from patcher.intake import StagedRepo, host_git
from patcher.sandbox import Sandbox
from patcher.verify.policy import (
    NEW_TEST_FILE,
    check_diff,
    check_tree,
    is_test_path,
    protected_names,
    source_only,
    tests_only,
)
from patcher.verify.probes import find_probes
from patcher.verify.reruns import RERUNS, OpenBox, flaky_on_base, rerun_failing
from patcher.verify.testruns import TestRun, run_tests
from patcher.verify.treediff import Change, tree_changes
from sandbox.protocol import ModulesRequest

NO_TESTS_COLLECTED = 5
__all__ = ["Baseline", "OpenBox", "Verification", "apply_diff", "run_baseline", "verify"]


Site = tuple[str, str]
"""(repo path, function) of the crash site: the innermost repository frame of the user's traceback."""


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
    suspicious: list[str] = field(default_factory=list)
    """Quoted added lines that probe the test environment (reason suspicious_diff)."""

    def as_json(self) -> dict[str, Any]:
        out = {"reproduction": self.reproduction, "fail_to_pass": self.fail_to_pass,
               "pass_to_pass": self.pass_to_pass, "flaky": self.flaky, "duration_s": round(self.duration_s, 3)}
        if self.suspicious:
            out["suspicious_lines"] = self.suspicious
        return out


class Ended(Exception):
    """A verdict reached part-way (raised by the checks below, caught once in _verify)."""

    def __init__(self, reason: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.reason, self.message, self.fields = reason, message, fields


def run_baseline(staged: StagedRepo, repro: str | None, exc_type: str | None, open_box: OpenBox,
                 suite_command: str, site: Site | None = None) -> Baseline:
    """The reproduction (which must fail with the traceback's exception, through the crash site) and the
    suite, on the pristine repo."""
    with open_box(staged) as box:
        installed = list(box.call(ModulesRequest()).data.get("modules") or [])
        first = run_tests(box, repro, "base-repro") if repro else None
        suite = run_tests(box, suite_command, "base-suite")
    matched = first is not None and first.outcome == "failed" and first.crashed(exc_type, site)
    return Baseline(first, suite, matched, installed)


def apply_diff(staged: StagedRepo, diff: str) -> tuple[StagedRepo, list[Change]]:
    """A copy of the staging tree with the diff applied by host git (which refuses paths out of the tree),
    and what really changed on disk (treediff: every spelling of a name or mode as git understood it)."""
    root = Path(tempfile.mkdtemp(prefix="patcher-verify-"))
    dest = root / "repo"
    try:
        shutil.copytree(staged.path, dest, symlinks=True)
        patch = root / "patch.diff"
        patch.write_text(diff, encoding="utf-8")
        for check in (["--check"], []):
            host_git(dest, "apply", *check, "--whitespace=nowarn", str(patch))
        changes = tree_changes(staged.path, dest)
    except git.GitCommandError as e:
        shutil.rmtree(root, ignore_errors=True)
        last = (e.stderr or str(e)).strip().splitlines()[-1:] or [""]
        raise BadInput(f"the patch does not apply to the base: {last[0].strip()}") from e
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    gone = {c.path for c in changes if c.kind == "deleted"}
    files = sorted((set(staged.files) - gone) | {c.path for c in changes if c.kind != "deleted"})
    return StagedRepo(dest, staged.base_commit, staged.source_commit, staged.dirty, files), changes


def verify(staged: StagedRepo, diff: str, base: Baseline, repro: str | None, exc_type: str | None,
           open_box: OpenBox, suite_command: str, site: Site | None = None) -> Verification:
    started = time.monotonic()
    out = _verify(staged, diff, base, repro, Crash(exc_type, site), open_box, suite_command)
    out.duration_s = time.monotonic() - started
    return out


@dataclass
class Crash:
    type: str | None
    site: Site | None


def _verify(staged: StagedRepo, diff: str, base: Baseline, repro: str | None, crash: Crash,
            open_box: OpenBox, suite_command: str) -> Verification:
    report = {"command": repro, "before": base.repro.outcome if base.repro else "not_run", "after": "not_run"}
    state: dict[str, Any] = {"runs": []}
    try:
        return _judge(staged, diff, base, repro, crash, open_box, suite_command, report, state)
    except Ended as e:
        status = "verified" if e.reason == "verified" else "not_verified"
        kept = {k: v for k, v in {**state, **e.fields}.items() if k in Verification.__dataclass_fields__}
        return Verification(status, e.reason, e.message, report, **kept)


def _judge(staged: StagedRepo, diff: str, base: Baseline, repro: str | None, crash: Crash, open_box: OpenBox,
           suite_command: str, report: dict[str, Any], state: dict[str, Any]) -> Verification:
    """The checks in order; each failing one raises Ended. The diff's source part alone is judged against
    the repo's tests; its new test files run apart (and, as the reproduction, must fail on the base)."""
    runs: list[tuple[str, TestRun]] = state["runs"]
    changes = _integrity(staged, diff, base, state)
    if not base.suite_usable:
        raise Ended("tests_failed", f"the test suite `{suite_command}` gave no usable result on the base code "
                    f"({_describe(base.suite)}), so regressions cannot be ruled out")
    added = [c.path for c in changes if c.kind == "added" and NEW_TEST_FILE.fullmatch(c.path.split("/")[-1])
             and is_test_path(c.path)]
    source = source_only(diff)
    own_repro = repro is None
    before = base.repro
    if own_repro:  # the agent wrote the reproduction: it must fail on the base code, with the crash
        if not added:
            raise Ended("not_reproduced", "no reproduction: no --test was given, the traceback names no test in "
                        "the repo, and the diff adds no test file")
        repro = "python -m pytest -q " + shlex.join(added)
        report["command"] = repro
        before = _in_box(staged, tests_only(diff), open_box, lambda box: _run(box, repro, "base-added-tests", runs))
        report["before"] = before.outcome
        if before.outcome != "failed" or not before.crashed(crash.type, crash.site):
            raise Ended("not_reproduced", "the tests the diff adds do not fail on the base code with the crash"
                        f"{_crash_words(crash)} ({_describe(before)}); they prove nothing")
    assert before is not None and repro is not None
    after = _check_source(staged, source, base, repro, own_repro, open_box, suite_command, report, state)
    if added:  # the new tests, with the whole diff: they must pass (every time, when they are the repro)
        command = repro if own_repro else "python -m pytest -q " + shlex.join(added)
        new = _in_box(staged, diff, open_box,
                      lambda box: _passes_every_time(box, command, "new-tests", runs, report if own_repro else None))
        after = new if own_repro else after
    state["fail_to_pass"] = sorted(before.failed & after.passed)
    unproven = sorted(before.failed - after.passed)
    if unproven:
        raise Ended("tests_failed", "tests that failed on the base did not pass with the diff: "
                    + ", ".join(unproven[:5]))
    p2p = state["pass_to_pass"]
    note = f"; {len(state['flaky'])} test(s) flaky on the base too were left out" if state["flaky"] else ""
    raise Ended("verified", f"`{repro}` failed on the base and passes with the diff; "
                f"{p2p['total']} test(s) that passed before still pass{note}")


def _integrity(staged: StagedRepo, diff: str, base: Baseline, state: dict[str, Any]) -> list[Change]:
    """Policy on the text, then on what git really changed, then the probe rules on the added lines."""
    policy = check_diff(diff, staged.files)
    state["files_changed"] = policy.files_changed
    if not policy.ok:
        raise Ended("policy_violation", "the diff breaks the integrity policy: " + "; ".join(policy.violations[:5]))
    patched, changes = apply_diff(staged, diff)
    patched.cleanup()
    state["files_changed"] = [c.path for c in changes]
    violations = check_tree(changes, staged.files, protected_names(base.installed), base.test_files)
    unnamed = sorted({c.path for c in changes} - set(policy.files_changed))
    if unnamed:  # the text said one thing and git did another: believe neither
        violations.append("git apply changed files the diff does not name: " + ", ".join(unnamed[:5]))
    if violations:
        raise Ended("policy_violation", "the diff breaks the integrity policy: " + "; ".join(violations[:5]))
    probes = find_probes(changes)
    if probes:
        state["suspicious"] = [p.quote() for p in probes[:50]]
        raise Ended("suspicious_diff", f"the diff adds {len(probes)} line(s) that probe the test environment "
                    "or the harness, which no crash fix needs: " + "; ".join(state["suspicious"][:3]))
    return changes


def _check_source(staged: StagedRepo, source: str, base: Baseline, repro: str, own_repro: bool, open_box: OpenBox,
                  suite_command: str, report: dict[str, Any], state: dict[str, Any]) -> TestRun:
    """With the diff's source part only: the reproduction passes every time, and nothing that passed breaks."""
    runs: list[tuple[str, TestRun]] = state["runs"]

    def body(box: Sandbox) -> TestRun:
        after = None if own_repro else _passes_every_time(box, repro, "repro", runs, report)
        suite = _run(box, suite_command, "suite", runs)
        if not (suite.reported or base.suite.passed == set()):
            raise Ended("tests_failed", f"the test suite gave no usable result with the diff ({_describe(suite)})")
        lost = sorted(base.suite.passed - suite.passed)
        state["regressions"], state["flaky"] = rerun_failing(box, suite_command, lost, runs)
        return after or suite

    after = _in_box(staged, source, open_box, body)
    regressions, flaky = state.pop("regressions"), state["flaky"]
    if flaky:
        regressions, flaky = flaky_on_base(staged, open_box, suite_command, regressions, flaky, runs)
        state["flaky"] = flaky
    state["pass_to_pass"] = {"total": len(base.suite.passed) - len(flaky), "regressions": regressions}
    if regressions:
        raise Ended("regression", f"{len(regressions)} test(s) that passed on the base fail with the diff: "
                    + ", ".join(regressions[:5]))
    return after


def _in_box(staged: StagedRepo, diff: str, open_box: OpenBox, body: Callable[[Sandbox], TestRun]) -> TestRun:
    """`body` in a fresh box on the base plus `diff` (the base itself when `diff` is empty)."""
    tree = apply_diff(staged, diff)[0] if diff.strip() else None
    try:
        with open_box(tree or staged) as box:
            return body(box)
    finally:
        if tree:
            tree.cleanup()


def _run(box: Sandbox, command: str, name: str, runs: list[tuple[str, TestRun]]) -> TestRun:
    """One run, recorded; a run whose stream, report and exit code disagree ends the verification."""
    run = run_tests(box, command, name)
    runs.append((name, run))
    if run.tampered:
        raise Ended("report_tampered", f"`{command}`: {run.tampered}; its results cannot be believed")
    return run


def _passes_every_time(box: Sandbox, command: str, name: str, runs: list[tuple[str, TestRun]],
                       report: dict[str, Any] | None) -> TestRun:
    """The run passes, and again on RERUNS reruns: a fix that passes only sometimes is no fix."""
    first = _run(box, command, name, runs)
    outcomes = [first.outcome]
    for n in range(RERUNS):
        outcomes.append(_run(box, command, f"{name}-rerun-{n + 1}", runs).outcome)
        if outcomes[0] != "passed":
            break
    if report is not None:
        report["after"] = "flaky" if len(set(outcomes)) > 1 else first.outcome
    if len(set(outcomes)) > 1:
        raise Ended("tests_failed", f"`{command}` is flaky with the diff ({', then '.join(outcomes)}); "
                    "a flaky pass is not a pass", flaky=[command])
    if first.outcome != "passed":
        raise Ended("tests_failed", f"`{command}` still does not pass with the diff ({_describe(first)})")
    return first


def _crash_words(crash: Crash) -> str:
    words = f" {crash.type}" if crash.type else ""
    return words + (f" raised through {crash.site[0]} in {crash.site[1]}" if crash.site else "")


def _describe(run: TestRun) -> str:
    if run.timed_out:
        return "timed out"
    if run.exit_code is None:
        return run.output_tail.strip().splitlines()[-1][:200] if run.output_tail.strip() else "did not run"
    if not run.reported:
        return f"exit code {run.exit_code} with no test report, so no test is known to have run"
    return f"exit code {run.exit_code}, {len(run.passed)} passed, {len(run.failed)} failed"
