"""The template search (the offline engine): fix candidates (repair/candidates.py) tried on the reproduction.

No model and no tokens. First the suite runs once with line coverage per test (patcher/repair/localize.py), so
candidates are tried on the top-ranked lines as well as the traceback's frames, best score × pattern
prior first. Each candidate's file is written into the box, the reproduction alone runs under
a short deadline (fast), then, only if it passes, the suite's tests that reach the edited function
(repair/select.py; a reproduction can pass for a wrong reason that breaks other tests); the file is put
back. A candidate that keeps every test that passed on the base
survives; the first survivor that also makes every test that failed on the base pass is taken at once.
One that leaves some of those failing may have fixed the symptom the reproduction checks and not the
bug (`last()` patched to read `tail()`'s wrong answer from its other end, while `test_tail` still
fails), so up to MORE_CHECKS further candidates are tried for one that leaves fewer failing; the best
survivor (fewest left, then the earliest) is handed on to the same full verification, in fresh
containers, as any agent diff. Order is deterministic, and the number of candidates and the seconds
spent are both bounded and reported. Checks run forked from a warm interpreter in the box
(repair/checks.py) and, where the machine has two cores, on a second box too, results read in candidate
order (repair/lanes.py).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from patcher.errors import SandboxError
from patcher.repair.candidates import Candidate, Stats, candidates
from patcher.repair.checks import Checker
from patcher.repair.lanes import Lanes, lane_count
from patcher.repair.localize import Suspect, coverage_ranking
from patcher.repair.select import Selection
from patcher.sandbox import Sandbox
from patcher.verify import Job, narrowed
from sandbox.protocol import WriteFileRequest

MIN_DEADLINE_S = 10.0
MIN_SHARE_CHECKS = 5
NEAR_MISSES = 10
"""Near misses kept for the result (the first ones tried)."""
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
    check_seconds: float = 0.0
    """Wall time of the checking (every lane: writes, reproduction and suite runs), not localization."""
    warm_runs: int = 0
    """Test runs of the checks that were forked from the warm interpreter (the rest ran cold)."""
    near_misses: list[dict[str, object]] = field(default_factory=list)
    """Candidates that made the reproduction pass and then failed tests of the suite that passed on the base
    (`template`, `path`, `line`, `description`, `broke`: those tests, `first_failure`: the first line saying
    why), in the order tried, at most NEAR_MISSES; their diffs never leave (none is verified)."""

    def search(self) -> dict[str, object]:
        """The search and its bounds, for the result's `agent.search`."""
        return {"checks": self.tried, "check_limit": self.limit, "suite_runs": self.suite_runs,
                "warm_runs": self.warm_runs, "seconds": round(self.seconds, 2),
                "check_seconds": round(self.check_seconds, 2), "time_budget_s": self.budget_s, "stopped": self.stopped,
                "generated": self.generated, "refused": self.refused, "still_failing": self.still_failing[:20],
                "near_misses": self.near_misses,
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
        near = ""
        if self.near_misses:
            first = self.near_misses[0]
            broke = list(first["broke"])  # type: ignore[call-overload]
            near = (f"; {len(self.near_misses)} made the reproduction pass and then failed the suite (the first, "
                    f"{first['template']} at {first['path']}:{first['line']}: {first['description']}, failed "
                    f"{', '.join(broke[:2])}{' …' if len(broke) > 2 else ''}"
                    + (f": {first['first_failure']}" if first["first_failure"] else "") + ")")
        return (f"offline engine: {self.tried} candidate(s) tried in {self.seconds:.1f} s, none passed ({why})"
                f"{near}")


def search_templates(job: Job, box: Sandbox, limit: int = 200, budget_s: float = 120.0,
                     share_s: float | None = None, warm: bool = True) -> TemplateSearch:
    """Try candidates in order until one passes, `limit` are tried or `budget_s` is spent. With `share_s`,
    the limit is also sized from the measured time of a check: about `share_s` seconds of them (auto mode,
    where the agent comes next), never fewer than MIN_SHARE_CHECKS. With `warm`, pytest checks run forked
    from a warm interpreter in the box (patcher/repair/checks.py); the suite's coverage run and the final
    verification never do."""
    started = time.monotonic()
    assert job.parsed is not None and job.repro is not None and job.base.repro is not None
    parsed, repo, repro, suite = job.parsed, job.staged.path, job.repro, job.suite_command
    base_run, base_suite = job.base.repro, job.base.suite
    fast = narrowed(repro, base_run.failed) or repro  # a candidate must make these pass: they run first
    check = _Check(fast, max(MIN_DEADLINE_S, 5 * base_run.duration_ms / 1000),  # a candidate may loop forever
                   suite, max(MIN_DEADLINE_S, 5 * base_suite.duration_ms / 1000), base_suite.passed,
                   base_suite.failed)
    stats = Stats()
    first = Checker(box, warm)
    first.prewarm(fast)  # the warm interpreter's imports overlap the coverage run
    # coverage slows the suite a few times over; half the budget at most, the candidates need the rest
    runs: list[dict[str, object]] = []
    suspects = coverage_ranking(box, suite, min(budget_s / 2, max(30.0, 2 * check.suite_deadline_s)), base_run.failed,
                                runs)
    check = dataclasses.replace(check, select=Selection(runs, base_suite.passed | base_suite.failed, base_suite.failed))
    lanes = Lanes(first, (lambda: job.open_box(job.staged)) if lane_count() > 1 else None, warm, prewarm=fast)
    try:
        loop = _Loop(limit, started, budget_s)
        checks_started = time.monotonic()
        for candidate, (left, ran_suite), seconds in lanes.in_order(
                loop.feed(candidates(parsed, repo, limit, stats, suspects), stats),
                lambda c, checker: _still_failing(checker, repo, c, check, next(loop.numbers))):
            if loop.take(candidate, left, ran_suite, seconds, share_s):
                break
        check_s = time.monotonic() - checks_started
    finally:
        lanes.close()
    found, left, chosen = loop.best or (None, set(), 0)
    return TemplateSearch(found, loop.tried, stats.generated, time.monotonic() - started,
                          "found" if found else loop.stopped, loop.suite_runs, stats.suppressing + stats.dead,
                          loop.limit, budget_s, suspects, sorted(left), chosen, check_s, lanes.warm_runs,
                          loop.near_misses)


class _Loop:
    """The search's bounds and its best survivor, as results come in (in candidate order, see lanes.py)."""

    def __init__(self, limit: int, started: float, budget_s: float) -> None:
        self.limit, self.started, self.budget_s = limit, started, budget_s
        self.tried = self.extra = self.suite_runs = self.fed = 0
        self.stopped = "exhausted"
        self.best: tuple[Candidate, set[str], int] | None = None
        self.numbers = itertools.count(1)
        self.near_misses: list[dict[str, object]] = []

    def feed(self, stream: Iterator[Candidate], stats: Stats) -> Iterator[Candidate]:
        """The candidates to check, until the time budget is spent or the limit is reached (a check or
        two may be in flight: `take` stops at the same bounds from the results' side)."""
        for candidate in stream:
            if time.monotonic() - self.started > self.budget_s:
                self.stopped = "time_budget"
                return
            if self.fed >= self.limit or (self.best and self.extra >= MORE_CHECKS):
                return
            self.fed += 1
            yield candidate
        if stats.limit_reached:
            self.stopped = "candidate_limit"

    def take(self, candidate: Candidate, left: set[str] | Miss | None, ran_suite: bool, seconds: float,
             share_s: float | None) -> bool:
        """Count one result; True when the search is over."""
        if isinstance(left, Miss):
            if len(self.near_misses) < NEAR_MISSES:
                self.near_misses.append(left.as_json(candidate))
            left = None
        self.tried += 1
        self.extra += self.best is not None
        self.suite_runs += ran_suite
        if share_s is not None and self.tried == 1:  # one check measured: as many as fit in the share
            self.limit = max(MIN_SHARE_CHECKS, min(self.limit, int(share_s / max(seconds, 0.01))))
        if left is not None and (self.best is None or len(left) < len(self.best[1])):
            self.best = (candidate, left, self.tried)
        if self.best and not self.best[1]:
            return True
        if self.tried >= self.limit:
            self.stopped = "candidate_limit"
            return True
        return bool(self.best and self.extra >= MORE_CHECKS)


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
    select: Selection | None = None
    """Which of the suite's tests reach the edited function (the rest need not run for a candidate)."""


@dataclass(frozen=True)
class Miss:
    """A candidate that made the reproduction pass and then failed tests that passed on the base."""

    broke: list[str]
    first_failure: str

    def as_json(self, candidate: Candidate) -> dict[str, object]:
        return {"template": candidate.template, "path": candidate.path, "line": candidate.line,
                "description": candidate.description, "broke": self.broke[:5], "first_failure": self.first_failure}


def _still_failing(runner: Checker, repo: Path, candidate: Candidate, check: _Check, n: int
                   ) -> tuple[set[str] | Miss | None, bool]:
    """None if the candidate fails the reproduction, a Miss if it then breaks a test that passed on the base
    (or the suite reports nothing), else the tests that failed on the base and still do not pass; and whether
    the suite ran."""
    box = runner.box
    with open(repo / candidate.path, encoding="utf-8", newline="") as f:
        original = f.read()
    _write(box, candidate.path, candidate.new_text)
    try:
        if not runner.run(check.repro, f"candidate-{n}", check.repro_deadline_s).ok:
            return None, False
        command, chosen = (check.select.command(check.suite, repo, candidate.path, candidate.line)
                           if check.select else (check.suite, None))
        suite = runner.run(command, f"candidate-{n}-suite", check.suite_deadline_s)
        keep = check.keep if chosen is None else check.keep & chosen
        if suite.reported and keep <= suite.passed:
            return check.broken - suite.passed, True
        return Miss(sorted(keep - suite.passed) if suite.reported else [command], suite.first_failure), True
    finally:
        _write(box, candidate.path, original)


def _write(box: Sandbox, path: str, text: str) -> None:
    result = box.call(WriteFileRequest(path=path, content=text))
    if result.is_error:
        raise SandboxError(f"offline engine could not write {path} in the box: {result.output}")
