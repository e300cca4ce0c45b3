"""The offline engine: template fix candidates (patcher/repair) tried against the reproduction in one box.

No model and no tokens. First the suite runs once with line coverage per test (patcher/repair/localize.py), so
candidates are tried on the top-ranked lines as well as the traceback's frames, best score × pattern
prior first. Each candidate's file is written into the box, the reproduction alone runs under
a short deadline (fast), then, only if it passes, the suite (a reproduction can pass for a wrong reason
that breaks other tests); the file is put back. The first candidate that keeps every test that passed on
the base is handed on to the same full verification, in fresh containers, as any agent diff. Order is
deterministic, and the number of candidates and the seconds spent are both bounded and reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from patcher.errors import SandboxError
from patcher.job import Job
from patcher.repair import Candidate, Stats, candidates, localize
from patcher.sandbox import Sandbox
from patcher.verify import run_tests
from sandbox.protocol import WriteFileRequest

MIN_DEADLINE_S = 10.0


@dataclass
class OfflineResult:
    candidate: Candidate | None
    tried: int
    generated: int
    seconds: float
    stopped: str
    """found | exhausted | candidate_limit | time_budget"""
    suite_runs: int = 0
    """Candidates that passed the fast check (the reproduction) and so had the suite run."""
    refused: int = 0
    """Candidates never tried because they silence the reported exception."""
    limit: int = 0
    budget_s: float = 0.0
    suspects: list[localize.Suspect] = field(default_factory=list)
    """The coverage ranking (best first); empty when the suite could not be measured."""

    def search(self) -> dict[str, object]:
        """The search and its bounds, for the result's `agent.search`."""
        return {"checks": self.tried, "check_limit": self.limit, "suite_runs": self.suite_runs,
                "seconds": round(self.seconds, 2), "time_budget_s": self.budget_s, "stopped": self.stopped,
                "generated": self.generated, "refused": self.refused,
                "localized": [{"path": x.path, "line": x.line, "score": round(x.score, 3)} for x in self.suspects[:5]]}

    @property
    def diff(self) -> str | None:
        return self.candidate.diff if self.candidate else None

    def summary(self) -> str:
        if self.candidate:
            c = self.candidate
            return (f"offline engine: candidate {self.tried} ({c.template} at {c.path}:{c.line}: {c.description}) "
                    f"makes the reproduction pass")
        why = {"exhausted": "no template fits", "candidate_limit": "the candidate limit was reached",
               "time_budget": "the time budget ran out"}[self.stopped]
        return f"offline engine: {self.tried} candidate(s) tried in {self.seconds:.1f} s, none passed ({why})"


def search(job: Job, box: Sandbox, limit: int = 200, budget_s: float = 120.0) -> OfflineResult:
    """Try candidates in order until one passes, `limit` are tried or `budget_s` is spent."""
    started = time.monotonic()
    assert job.parsed is not None and job.repro is not None and job.base.repro is not None
    parsed, repo, repro, suite = job.parsed, job.staged.path, job.repro, job.suite_command
    base_run, base_suite = job.base.repro, job.base.suite
    check = _Check(repro, max(MIN_DEADLINE_S, 5 * base_run.duration_ms / 1000),  # a candidate may loop forever
                   suite, max(MIN_DEADLINE_S, 5 * base_suite.duration_ms / 1000), base_suite.passed)
    stats = Stats()
    tried = 0
    stopped = "exhausted"
    found = None
    suite_runs = [0]
    # coverage slows the suite a few times over; half the budget at most, the candidates need the rest
    suspects = localize.measure(box, suite, min(budget_s / 2, max(30.0, 2 * check.suite_deadline_s)), base_run.failed)
    for candidate in candidates(parsed, repo, limit, stats, suspects):
        if time.monotonic() - started > budget_s:
            stopped = "time_budget"
            break
        tried += 1
        if _passes(box, repo, candidate, check, tried, suite_runs):
            found, stopped = candidate, "found"
            break
    else:
        if stats.limit_reached:
            stopped = "candidate_limit"
    return OfflineResult(found, tried, stats.generated, time.monotonic() - started, stopped, suite_runs[0],
                         stats.suppressing, limit, budget_s, suspects)


@dataclass(frozen=True)
class _Check:
    repro: str
    repro_deadline_s: float
    suite: str
    suite_deadline_s: float
    keep: set[str]
    """Tests that passed on the base and must still pass."""


def _passes(box: Sandbox, repo: Path, candidate: Candidate, check: _Check, n: int, suite_runs: list[int]) -> bool:
    with open(repo / candidate.path, encoding="utf-8", newline="") as f:
        original = f.read()
    _write(box, candidate.path, candidate.new_text)
    try:
        if run_tests(box, check.repro, f"candidate-{n}", check.repro_deadline_s).outcome != "passed":
            return False
        suite_runs[0] += 1
        suite = run_tests(box, check.suite, f"candidate-{n}-suite", check.suite_deadline_s)
        return suite.reported and check.keep <= suite.passed
    finally:
        _write(box, candidate.path, original)


def _write(box: Sandbox, path: str, text: str) -> None:
    result = box.call(WriteFileRequest(path=path, content=text))
    if result.is_error:
        raise SandboxError(f"offline engine could not write {path} in the box: {result.output}")
