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
from pathlib import Path

from patcher.errors import BadInput
from patcher.intake import CrashSite, GitFailed, StagedRepo, host_git
from patcher.sandbox import Sandbox
from patcher.verify.contain import derived, targets_in
from patcher.verify.job import Job
from patcher.verify.judges import Judging, run
from patcher.verify.judges.box import JudgeBox
from patcher.verify.judges.heldout.judge import HeldOut
from patcher.verify.policy.doctests import changed_doctests
from patcher.verify.policy.rules import (
    NEW_TEST_FILE,
    check_diff,
    check_tree,
    is_test_path,
    protected_names,
    source_only,
    tests_only,
)
from patcher.verify.policy.sources import hidden_text, unparsable
from patcher.verify.policy.treediff import Change, tree_changes
from patcher.verify.records import Baseline, Coverage, Findings, Refused, Verification
from patcher.verify.reruns import RERUNS, flaky_on_base, rerun_failing
from patcher.verify.testids import kept, missing
from patcher.verify.testruns import TestRun, run_tests
from sandbox.protocol import ModulesRequest


def run_baseline(job: Job) -> Baseline:
    """The reproduction (which must fail with the traceback's exception, through the crash site) and the
    suite, on the pristine repo."""
    targets = targets_in(job.repro, job.suite_command)
    with job.open_box(job.staged) as box:
        installed = list(box.call(ModulesRequest()).data.get("modules") or [])
        first: TestRun | None = None
        if job.repro and targets:  # the suite runs the reproduction's tests: one run may answer both
            suite = run_tests(box, job.suite_command, "base-suite")
            first = _reproduced_in(suite, job, targets) or run_tests(box, job.repro, "base-repro")
        else:
            first = run_tests(box, job.repro, "base-repro") if job.repro else None
            suite = run_tests(box, job.suite_command, "base-suite")
    matched = first is not None and first.outcome == "failed" and first.crashed(job.exc_type, job.site)
    return Baseline(first, suite, matched, installed)


def _reproduced_in(suite: TestRun, job: Job, targets: list[str]) -> TestRun | None:
    """The reproduction's tests as the base suite ran them, when they failed there with the crash (any other
    answer is left to a run of the reproduction on its own)."""
    assert job.repro is not None
    shared = derived(suite, job.repro, targets)
    if shared is not None and shared.outcome == "failed" and shared.crashed(job.exc_type, job.site):
        return shared
    return None


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
    except GitFailed as e:
        shutil.rmtree(root, ignore_errors=True)
        last = (e.stderr or str(e)).strip().splitlines()[-1:] or [""]
        raise BadInput(f"the patch does not apply to the base: {last[0].strip()}") from e
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    gone = {c.path for c in changes if c.kind == "deleted"}
    files = sorted((set(staged.files) - gone) | {c.path for c in changes if c.kind != "deleted"})
    return StagedRepo(dest, staged.base_commit, staged.source_commit, staged.dirty, files), changes


def verify(job: Job, diff: str) -> Verification:
    """The verdict on `diff`, from the named steps in `_judge`; the job's baseline is the reference."""
    started = time.monotonic()
    base = job.base
    found = Findings({"command": job.repro, "before": base.repro.outcome if base.repro else "not_run",
                      "after": "not_run"})
    try:
        message = _judge(job, diff, found)
    except Refused as e:
        return found.verdict("not_verified", e.reason, e.message, time.monotonic() - started)
    if found.coverage is None or not found.coverage.full:  # a judge that could not judge is not one that agreed
        missing = found.coverage.missing if found.coverage else ["no judge ran"]
        return found.verdict("unjudged", "unjudged", f"{message}; but not every judge could judge the diff: "
                             + "; ".join(missing[:3]), time.monotonic() - started)
    return found.verdict("verified", "verified", message, time.monotonic() - started)


def _judge(job: Job, diff: str, found: Findings) -> str:
    """The steps in order, each filling `found`; a failing one raises Refused. How the diff looks joins the
    evidence as hints whatever the verdict, marked where the behavioural judges' evidence meets it
    (judges/constructs/looks.py). Returns the verified message."""
    changes = _integrity(job, diff, found)
    try:
        return _judge_behaviour(job, diff, changes, found)
    finally:  # how the diff looks joins as hints whatever the verdict, after what the judges saw it do
        run("text", Judging(job, found, changes))


def _judge_behaviour(job: Job, diff: str, changes: list[Change], found: Findings) -> str:
    """The test runs and the judges of what the diff does. The diff's source part alone is judged against the
    repo's tests; its new test files run apart (and, as the reproduction, must fail on the base)."""
    if not job.base.suite_usable:
        raise Refused("tests_failed", f"the test suite `{job.suite_command}` gave no usable result on the base "
                    f"code ({job.base.suite.described()}), so regressions cannot be ruled out")
    added = [c.path for c in changes if c.kind == "added" and NEW_TEST_FILE.fullmatch(c.path.split("/")[-1])
             and is_test_path(c.path)]
    repro, before = _reproduction(job, diff, added, found)
    judged = diff if job.repro is None else source_only(diff)
    held = HeldOut(job, before.failed, added)
    judge = JudgeBox(job.open_box, lambda: apply_diff(job.staged, judged), held, job, before) if judged.strip() \
        else None
    try:
        after = _check_source(job, source_only(diff), repro, found)
        if added:
            after = _new_tests(job, diff, added, repro, found) or after
        found.fail_to_pass = kept(before.failed, after.passed)
        unproven = missing(before.failed, after.passed)
        if unproven:
            raise Refused("tests_failed", "tests that failed on the base did not pass with the diff: "
                          + ", ".join(unproven[:5]))
        if found.fail_to_pass and judge is not None:
            judge.judge(job, added, found, before)
        else:
            found.coverage = Coverage()
            found.coverage.add("second", False, "no fail-to-pass test the judges can run")
        found.refuse_on_evidence()
    finally:
        if judge is not None:
            judge.close()
    note = f"; {len(found.flaky)} test(s) flaky on the base too were left out" if found.flaky else ""
    return (f"`{repro}` failed on the base and passes with the diff; "
            f"{found.pass_to_pass['total']} test(s) that passed before still pass{note}")


def _reproduction(job: Job, diff: str, added: list[str], found: Findings) -> tuple[str, TestRun]:
    """The reproduction and its run on the base: the job's, or (none given) the tests the diff adds, which
    must then fail on the base code with the crash."""
    if job.repro is not None:
        assert job.base.repro is not None
        return job.repro, job.base.repro
    if not added:
        raise Refused("not_reproduced", "no reproduction: no --test was given, the traceback names no test in "
                    "the repo, and the diff adds no test file")
    repro = "python -m pytest -q " + shlex.join(added)
    found.reproduction["command"] = repro
    before = _in_box(job, tests_only(diff), lambda box: _run(box, repro, "base-added-tests", found))
    found.reproduction["before"] = before.outcome
    if before.outcome != "failed" or not before.crashed(job.exc_type, job.site):
        raise Refused("not_reproduced", "the tests the diff adds do not fail on the base code with the crash"
                    f"{_crash_words(job.exc_type, job.site)} ({before.described()}); they prove nothing")
    return repro, before


def _new_tests(job: Job, diff: str, added: list[str], repro: str, found: Findings) -> TestRun | None:
    """The tests the diff adds, with the whole diff: they pass, every time. The run that counts as `after`
    when they are the reproduction."""
    own = job.repro is None
    command = repro if own else "python -m pytest -q " + shlex.join(added)
    new = _in_box(job, diff, lambda box: _passes_every_time(box, command, "new-tests", found, own))
    return new if own else None


def _integrity(job: Job, diff: str, found: Findings) -> list[Change]:
    """Policy on the text, then on what git really changed (and on the text Python will read)."""
    staged, base = job.staged, job.base
    policy = check_diff(diff, staged.files)
    found.files_changed = policy.files_changed
    if not policy.ok:
        raise Refused("policy_violation", "the diff breaks the integrity policy: " + "; ".join(policy.violations[:5]))
    patched, changes = apply_diff(staged, diff)
    patched.cleanup()
    found.files_changed = [c.path for c in changes]
    violations = check_tree(changes, staged.files, protected_names(base.installed),
                            base.test_files - base.doctest_files)
    violations += changed_doctests(changes, base.doctest_files)
    unnamed = sorted({c.path for c in changes} - set(policy.files_changed))
    if unnamed:  # the text said one thing and git did another: believe neither
        violations.append("git apply changed files the diff does not name: " + ", ".join(unnamed[:5]))
    violations += unparsable(changes) + hidden_text(changes)
    if violations:
        raise Refused("policy_violation", "the diff breaks the integrity policy: " + "; ".join(violations[:5]))
    return changes


def _check_source(job: Job, source: str, repro: str, found: Findings) -> TestRun:
    """With the diff's source part only: the reproduction passes every time, and nothing that passed breaks."""
    base, suite_command, own_repro = job.base, job.suite_command, job.repro is None
    targets = None if own_repro else targets_in(repro, suite_command)
    lost: list[str] = []

    def body(box: Sandbox) -> TestRun:
        alone = RERUNS - 1 if targets else RERUNS  # the suite's run of its tests is one of the passes
        after = None if own_repro else _passes_every_time(box, repro, "repro", found, True, alone)
        suite = _run(box, suite_command, "suite", found)
        if not (suite.reported or base.suite.passed == set()):
            raise Refused("tests_failed", f"the test suite gave no usable result with the diff ({suite.described()})")
        if targets:
            _passes_in_suite(box, repro, targets, suite, found)
        still, found.flaky = rerun_failing(box, suite_command, missing(base.suite.passed, suite.passed), found.runs)
        lost.extend(still)
        return after or suite

    after = _in_box(job, source, body)
    regressions = lost
    if found.flaky:
        regressions, found.flaky = flaky_on_base(job.staged, job.open_box, suite_command, regressions, found.flaky,
                                                 found.runs)
    found.pass_to_pass = {"total": len(base.suite.passed) - len(found.flaky), "regressions": regressions}
    if regressions:
        raise Refused("regression", f"{len(regressions)} test(s) that passed on the base fail with the diff: "
                      + ", ".join(regressions[:5]))
    return after


def _in_box(job: Job, diff: str, body: Callable[[Sandbox], TestRun]) -> TestRun:
    """`body` in a fresh box on the base plus `diff` (the base itself when `diff` is empty)."""
    tree = apply_diff(job.staged, diff)[0] if diff.strip() else None
    try:
        with job.open_box(tree or job.staged) as box:
            return body(box)
    finally:
        if tree:
            tree.cleanup()


def _run(box: Sandbox, command: str, name: str, found: Findings) -> TestRun:
    """One run, recorded; a run whose stream, report and exit code disagree ends the verification."""
    run = run_tests(box, command, name)
    found.runs.append((name, run))
    if run.tampered:
        raise Refused("report_tampered", f"`{command}`: {run.tampered}; its results cannot be believed")
    return run


def _passes_in_suite(box: Sandbox, repro: str, targets: list[str], suite: TestRun, found: Findings) -> None:
    """The reproduction's last required pass: its tests within the suite's run, else one more run alone."""
    shared = derived(suite, repro, targets)
    last = shared if shared is not None else _run(box, repro, f"repro-rerun-{RERUNS}", found)
    if last.outcome != "passed":
        found.reproduction["after"], found.flaky = "flaky", [repro]
        where = "within the suite" if shared is not None else "on a rerun"
        raise Refused("tests_failed", f"`{repro}` is flaky with the diff (passed, then {last.outcome} {where}); "
                      "a flaky pass is not a pass")


def _passes_every_time(box: Sandbox, command: str, name: str, found: Findings, is_repro: bool,
                       reruns: int = RERUNS) -> TestRun:
    """The run passes, and again on `reruns` reruns: a fix that passes only sometimes is no fix. When the run
    is the reproduction's (`is_repro`), its outcome is the reproduction's `after`."""
    first = _run(box, command, name, found)
    outcomes = [first.outcome]
    for n in range(reruns):
        outcomes.append(_run(box, command, f"{name}-rerun-{n + 1}", found).outcome)
        if outcomes[0] != "passed":
            break
    if is_repro:
        found.reproduction["after"] = "flaky" if len(set(outcomes)) > 1 else first.outcome
    if len(set(outcomes)) > 1:
        found.flaky = [command]
        raise Refused("tests_failed", f"`{command}` is flaky with the diff ({', then '.join(outcomes)}); "
                      "a flaky pass is not a pass")
    if first.outcome != "passed":
        raise Refused("tests_failed", f"`{command}` still does not pass with the diff ({first.described()})")
    return first


def _crash_words(exc_type: str | None, site: CrashSite | None) -> str:
    words = f" {exc_type}" if exc_type else ""
    return words + (f" raised through {site[0]} in {site[1]}" if site else "")

