"""The template search (the offline engine): fix candidates (repair/candidates.py) tried on the reproduction.

No model and no tokens. First the suite runs once with line coverage per test (patcher/repair/localize.py), so
candidates are tried on the top-ranked lines as well as the traceback's frames, best score × pattern
prior first. Each candidate's file is written into the box, the reproduction alone runs under
a short deadline (fast), then, only if it passes, the suite (a reproduction can pass for a wrong reason
that breaks other tests); the file is put back. A candidate that keeps every test that passed on the base
survives; the first survivor that also makes every test that failed on the base pass is taken at once.
One that leaves some of those failing may have fixed the symptom the reproduction checks and not the
bug (`last()` patched to read `tail()`'s wrong answer from its other end, while `test_tail` still
fails), so up to MORE_CHECKS further candidates are tried for one that leaves fewer failing; the best
survivor (fewest left, then the earliest) is handed on to the same full verification, in fresh
containers, as any agent diff. Order is deterministic, and the number of candidates and the seconds
spent are both bounded and reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from patcher.errors import SandboxError
from patcher.repair.candidates import Candidate, Stats, candidates
from patcher.repair.localize import Suspect, coverage_ranking
from patcher.sandbox import Sandbox
from patcher.verify import Job, narrowed, run_tests
from sandbox.protocol import WriteFileRequest

MIN_DEADLINE_S = 10.0
MIN_SHARE_CHECKS = 5
MORE_CHECKS = 40
"""Checks after a survivor that leaves tests failing that failed on the base, looking for a better one."""


@dataclass
class TemplateSearch:
    candidate: Candidate | None
    tried: int
    generated: int
    seconds: float
    stopped: str
    """found | exhausted | candidate_limit | time_budget"""
    suite_runs: int = 0
    """Candidates that passed the fast check (the reproduction) and so had the suite run."""
    refused: int = 0
    """Candidates never tried because they silence the reported exception or make a branch dead."""
    limit: int = 0
    budget_s: float = 0.0
    suspects: list[Suspect] = field(default_factory=list)
    """The coverage ranking (best first); empty when the suite could not be measured."""
    still_failing: list[str] = field(default_factory=list)
    """Tests that failed on the base and still fail with the candidate (none: it fixed them all)."""
    chosen: int = 0
    """Which check found the candidate (1-based; 0 without one)."""

    def search(self) -> dict[str, object]:
        """The search and its bounds, for the result's `agent.search`."""
        return {"checks": self.tried, "check_limit": self.limit, "suite_runs": self.suite_runs,
                "seconds": round(self.seconds, 2), "time_budget_s": self.budget_s, "stopped": self.stopped,
                "generated": self.generated, "refused": self.refused, "still_failing": self.still_failing[:20],
                "localized": [{"path": x.path, "line": x.line, "score": round(x.score, 3)} for x in self.suspects[:5]]}

    @property
    def diff(self) -> str | None:
        return self.candidate.diff if self.candidate else None

    def summary(self) -> str:
        if self.candidate:
            c = self.candidate
            n = len(self.still_failing)
            left = f" ({n} test(s) that failed on the base still fail)" if n else ""
            return (f"offline engine: candidate {self.chosen} of {self.tried} ({c.template} at {c.path}:{c.line}: "
                    f"{c.description}) makes the reproduction pass{left}")
        why = {"exhausted": "no template fits", "candidate_limit": "the candidate limit was reached",
               "time_budget": "the time budget ran out"}[self.stopped]
        return f"offline engine: {self.tried} candidate(s) tried in {self.seconds:.1f} s, none passed ({why})"


def search_templates(job: Job, box: Sandbox, limit: int = 200, budget_s: float = 120.0,
           share_s: float | None = None) -> TemplateSearch:
    """Try candidates in order until one passes, `limit` are tried or `budget_s` is spent. With `share_s`,
    the limit is also sized from the measured time of a check: about `share_s` seconds of them (auto mode,
    where the agent comes next), never fewer than MIN_SHARE_CHECKS."""
    started = time.monotonic()
    assert job.parsed is not None and job.repro is not None and job.base.repro is not None
    parsed, repo, repro, suite = job.parsed, job.staged.path, job.repro, job.suite_command
    base_run, base_suite = job.base.repro, job.base.suite
    fast = narrowed(repro, base_run.failed) or repro  # a candidate must make these pass: they run first
    check = _Check(fast, max(MIN_DEADLINE_S, 5 * base_run.duration_ms / 1000),  # a candidate may loop forever
                   suite, max(MIN_DEADLINE_S, 5 * base_suite.duration_ms / 1000), base_suite.passed,
                   base_suite.failed)
    stats = Stats()
    tried = extra = 0
    stopped = "exhausted"
    best: tuple[Candidate, set[str], int] | None = None
    suite_runs = [0]
    # coverage slows the suite a few times over; half the budget at most, the candidates need the rest
    suspects = coverage_ranking(box, suite, min(budget_s / 2, max(30.0, 2 * check.suite_deadline_s)), base_run.failed)
    for candidate in candidates(parsed, repo, limit, stats, suspects):
        if time.monotonic() - started > budget_s:
            stopped = "time_budget"
            break
        if best and extra >= MORE_CHECKS:
            break
        if tried >= limit:
            stopped = "candidate_limit"
            break
        tried += 1
        extra += best is not None
        at = time.monotonic()
        left = _still_failing(box, repo, candidate, check, tried, suite_runs)
        if share_s is not None and tried == 1:  # one check measured: as many as fit in the share
            limit = max(MIN_SHARE_CHECKS, min(limit, int(share_s / max(time.monotonic() - at, 0.01))))
        if left is not None and (best is None or len(left) < len(best[1])):
            best = (candidate, left, tried)
        if best and not best[1]:
            break
    else:
        if stats.limit_reached:
            stopped = "candidate_limit"
    found, left, chosen = best or (None, set(), 0)
    return TemplateSearch(found, tried, stats.generated, time.monotonic() - started, "found" if found else stopped,
                         suite_runs[0], stats.suppressing + stats.dead, limit, budget_s, suspects, sorted(left), chosen)


@dataclass(frozen=True)
class _Check:
    repro: str
    repro_deadline_s: float
    suite: str
    suite_deadline_s: float
    keep: set[str]
    """Tests that passed on the base and must still pass."""
    broken: set[str]
    """Tests that failed on the base: a fix of the bug the reproduction shows should make them pass too."""


def _still_failing(box: Sandbox, repo: Path, candidate: Candidate, check: _Check, n: int, suite_runs: list[int]
                   ) -> set[str] | None:
    """None if the candidate fails the reproduction or breaks a test that passed on the base, else the
    tests that failed on the base and still do not pass."""
    with open(repo / candidate.path, encoding="utf-8", newline="") as f:
        original = f.read()
    _write(box, candidate.path, candidate.new_text)
    try:
        if run_tests(box, check.repro, f"candidate-{n}", check.repro_deadline_s).outcome != "passed":
            return None
        suite_runs[0] += 1
        suite = run_tests(box, check.suite, f"candidate-{n}-suite", check.suite_deadline_s)
        return check.broken - suite.passed if suite.reported and check.keep <= suite.passed else None
    finally:
        _write(box, candidate.path, original)


def _write(box: Sandbox, path: str, text: str) -> None:
    result = box.call(WriteFileRequest(path=path, content=text))
    if result.is_error:
        raise SandboxError(f"offline engine could not write {path} in the box: {result.output}")
