"""What a judge is, what it is handed, and what it hands back (the list of judges, in order: judges/__init__.py).

A judge asks one question of the diff by evidence the diff cannot shape. It says whether it applies to the job
(and why not), whether it could ask its question (and why not), and what it saw: refusals and hints
(records.Evidence), and a summary for `verification.judges`. A judge that applies and could not judge is not a
judge that agreed: where it is `required`, the verdict falls to `unjudged` (records.Coverage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from patcher.result import Reason
from patcher.verify.job import Job
from patcher.verify.records import Evidence, Findings
from patcher.verify.testruns import TestRun

if TYPE_CHECKING:
    from patcher.intake import StagedRepo
    from patcher.sandbox import Sandbox
    from patcher.verify.policy.treediff import Change

Phase = Literal["box", "text", "model"]
"""Where a judge runs: in the judges' box after pytest passed the fix; on the diff's text whatever the verdict;
by the job's model after verification (the reviewer: patcher/agent/review.py, agent and auto modes only)."""


@dataclass
class Judged:
    """One judge's answer on one diff."""

    applies: bool = True
    judged: bool = False
    why: str = ""
    """Why it does not apply, or why it could not judge (empty when it judged)."""
    evidence: list[Evidence] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, e: Exception) -> Judged:
        """A judge's own fault: evidence of its own kind, never a refusal and never a pass."""
        return cls(judged=False, why=f"the judge failed ({type(e).__name__}: {str(e)[:160]})")


@dataclass
class Judging:
    """What the judges are handed: the job, what verification found so far (pytest's runs, the earlier judges'
    evidence), and, in the box phase, the judges' box and its tree (the base plus the judged diff)."""

    job: Job
    found: Findings
    changes: list[Change]
    """What the judged diff changes, as git applied it (the tests the diff adds included)."""
    added: list[str] = field(default_factory=list)
    """The test files the diff adds (judged apart: never the code under judgement)."""
    before: TestRun | None = None
    """pytest's run of the fail-to-pass tests on the base."""
    box: Sandbox | None = None
    tree: StagedRepo | None = None
    held: Any = None
    """The held-out judge's recording, made on the base while pytest verified (heldout/judge.py HeldOut)."""
    shared: dict[str, Any] = field(default_factory=dict)
    """What several judges read and one of them made (the second judge's box run: judges/asked.py)."""

    @property
    def source(self) -> list[Change]:
        """The changes under judgement: the diff's, without the test files it adds."""
        return [c for c in self.changes if c.path not in self.added]


@dataclass(frozen=True)
class Judge:
    """One entry of JUDGES."""

    name: str
    """As `verification.judges`, `verification.coverage` and evidence entries name it."""
    check: int
    """Its number in docs/verified.md."""
    rests_on: str
    """What its verdict rests on, in one line (README's table of judges)."""
    reasons: tuple[Reason, ...]
    """What it may refuse with (empty: it only ever gives hints)."""
    required: bool
    """Whether `verified` needs its judgement where it applies."""
    phase: Phase
    run: Callable[[Judging], Judged] | None = None
    """None for the reviewer, which the engine runs after verification."""
