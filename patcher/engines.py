"""Who proposes the fix, behind one seam: `Engine.propose(job, run) -> Proposal`.

    TemplateEngine   fix templates tried in one box (patcher/repair), no model
    AgentEngine      the LLM agent, re-told why when verification rejects its diff (up to `attempts`)
    AutoEngine       templates within a small budget, then the agent with what the templates learned

Each engine verifies what it proposes (the same `verify_job` as `patcher verify`), so a Proposal is a
verdict, and the pipeline only writes it down.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from patcher.agent import Agent, AgentResult, Limits, attempt_record, briefing, diff_digest, task_text, verdict_note
from patcher.job import Job
from patcher.model import LLM, ModelConfig, OpenAIModel
from patcher.repair import engine as templates
from patcher.repair import localize
from patcher.repair.site import is_test_path
from patcher.repair.suppress import diff_warnings
from patcher.result import AgentSummary, Reason, as_reason
from patcher.sandbox import Sandbox, diff_of
from patcher.steps import Progress, verify_job
from patcher.stopper import Stopper
from patcher.trace import Trace
from patcher.verify import Verification

AUTO_LIMIT = 40
AUTO_BUDGET_S = 45.0
AUTO_SHARE_S = 20.0
"""In auto mode the template engine gets about AUTO_SHARE_S seconds of checks (their number sized from the
measured time of one, at most AUTO_LIMIT) and AUTO_BUDGET_S in all before the agent takes over."""


@dataclass(frozen=True)
class Run:
    """What an engine reports to and is stopped by while it works on one job."""

    trace: Trace
    progress: Progress
    stopper: Stopper


@dataclass
class Proposal:
    """An engine's ending: a diff with its verdict, or the reason there is none."""

    reason: Reason
    message: str
    summary: AgentSummary
    diff: str = ""
    verification: Verification | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    search: templates.OfflineResult | None = None
    """The template search, when one ran (its coverage ranking goes to the engine that comes next)."""

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.status == "verified"


class Engine(Protocol):
    def propose(self, job: Job, run: Run) -> Proposal: ...


@dataclass(frozen=True)
class TemplateEngine:
    limit: int = 200
    budget_s: float = 120.0
    share_s: float | None = None
    """Size the number of checks to about this many seconds of them (auto mode)."""

    def applies(self, job: Job) -> bool:
        """Templates need a parsed traceback and a reproduction that failed on the base."""
        return job.parsed is not None and job.repro is not None and job.base.repro is not None

    def propose(self, job: Job, run: Run) -> Proposal:
        if not self.applies(job):
            return Proposal("not_reproduced", "the offline engine needs a reproduction: pass --test CMD (or a "
                            "pytest traceback naming the failing test)", AgentSummary(engine="offline"))
        run.progress("offline engine: trying fix templates against the reproduction")
        with job.open_box(job.staged) as box:
            found = templates.search(job, box, self.limit, self.budget_s, self.share_s)
        run.trace.emit("offline", tried=found.tried, generated=found.generated, stopped=found.stopped,
                       seconds=round(found.seconds, 3), template=found.candidate.template if found.candidate else None)
        summary = AgentSummary(stop=found.stopped, engine="offline", candidates_tried=found.tried,
                               search=found.search())
        if not found.diff:
            return Proposal("no_change", found.summary(), summary, search=found)
        run.progress("verifying the diff in fresh containers")
        ver = verify_job(job, found.diff, run.trace)
        return Proposal(ver.reason, f"{found.summary()}; {ver.message}", summary, found.diff, ver, search=found)


@dataclass(frozen=True)
class AgentEngine:
    limits: Limits
    attempts: int = 3
    llm: LLM | None = None
    model: ModelConfig | None = None
    """Used when no `llm` is given (None: the environment's), read only when the agent is first needed."""

    def propose(self, job: Job, run: Run, prior: Proposal | None = None) -> Proposal:
        with contextlib.ExitStack() as own:
            llm = self.llm or own.enter_context(OpenAIModel(self.model or ModelConfig.from_env()))
            run.progress("agent at work in the sandbox")
            suspects = prior.search.suspects if prior and prior.search else _localize(job)
            run.stopper.check()
            box = own.enter_context(job.open_box(job.staged))
            agent = Agent(llm, box, run.trace, self.limits, stopper=run.stopper)
            redact = run.trace.redact.text
            outcome = agent.run(task_text(job, suspects, self.limits.context_tokens, redact),
                                briefing(job, suspects, redact))
            outcome, diff, ver, attempts = _until_verified(agent, outcome, box, job, run, self.attempts)
        summary = _summary(outcome, prior.search if prior else None)
        if outcome.reason == "gave_up":  # the agent's own answer: nothing it changed is verified or handed out
            return Proposal("gave_up", outcome.message, summary, attempts=attempts)
        if ver is None:
            reason = "no_change" if outcome.reason == "finished" else as_reason(outcome.reason)
            return Proposal(reason, f"no change was made ({outcome.message})", summary, attempts=attempts)
        reason = ver.reason if ver.status == "verified" or outcome.reason == "finished" else as_reason(outcome.reason)
        message = ver.message if reason == ver.reason else f"{outcome.message}; {ver.message}"
        return Proposal(reason, message, summary, diff, ver, attempts,
                        diff_warnings(diff, job.staged.path, job.parsed))


@dataclass(frozen=True)
class AutoEngine:
    """Templates first (a small budget); the agent only when they verify nothing, told what they measured."""

    first: TemplateEngine
    then: AgentEngine

    @classmethod
    def sized(cls, limit: int, budget_s: float, then: AgentEngine) -> AutoEngine:
        """Templates within auto's share (the caller's limit and budget as caps), then `then`."""
        return cls(TemplateEngine(min(limit, AUTO_LIMIT), min(budget_s, AUTO_BUDGET_S), AUTO_SHARE_S), then)

    def propose(self, job: Job, run: Run) -> Proposal:
        tried = self.first.propose(job, run) if self.first.applies(job) else None
        if tried is not None and tried.verified:
            return tried
        return self.then.propose(job, run, tried)


def _until_verified(agent: Agent, outcome: AgentResult, box: Sandbox, job: Job, run: Run, allowed: int
                    ) -> tuple[AgentResult, str, Verification | None, list[dict[str, Any]]]:
    """Verify the agent's diff; while rejected (and the agent finished on its own, within `allowed`
    verifications), tell it why and let it go on. A diff unchanged since the last verdict is not re-run."""
    attempts: list[dict[str, Any]] = []
    ver: Verification | None = None
    while True:
        run.stopper.check()
        diff = "" if run.stopper.killed(box) else diff_of(box)  # killed: a tool call outlived the wall clock
        if outcome.reason == "gave_up" or not diff.strip():
            return outcome, diff, None, attempts
        if ver is not None and attempts[-1]["diff_sha256"] == diff_digest(diff):
            return outcome, diff, ver, attempts
        run.progress(f"verifying the diff in fresh containers (attempt {len(attempts) + 1})")
        run.stopper.check()
        ver = verify_job(job, diff, run.trace)
        attempts.append(attempt_record(len(attempts) + 1, ver, diff))
        run.trace.emit("attempt", **attempts[-1])
        if ver.status == "verified" or outcome.reason != "finished" or len(attempts) >= allowed:
            return outcome, diff, ver, attempts
        run.progress(f"attempt {len(attempts)} rejected ({ver.reason}): the agent hears why")
        outcome = agent.resume(verdict_note(ver, len(attempts), allowed))


def _localize(job: Job) -> list[localize.Suspect]:
    """The coverage ranking for the agent's task text (the template engine measures its own), in a box of
    its own: files the suite writes must not end up in the agent's diff. Only when the traceback's innermost
    repository frame is a test (a wrong value, not a crash): otherwise the traceback already points into
    the code, and a suite run under line tracing would cost more than the whole rest of the job."""
    if job.repro is None or job.base.repro is None or (job.site and not is_test_path(job.site[0])):
        return []
    deadline = max(30.0, 10 * job.base.suite.duration_ms / 1000)
    with job.open_box(job.staged) as box:
        return localize.measure(box, job.suite_command, deadline, job.base.repro.failed)


def _summary(outcome: AgentResult, prior: templates.OfflineResult | None) -> AgentSummary:
    tried = prior.tried if prior else 0
    return AgentSummary(rounds=outcome.rounds, tool_calls=outcome.tool_calls, stop=outcome.reason,
                        tokens={"input": outcome.tokens_in, "output": outcome.tokens_out}, cost_usd=outcome.cost_usd,
                        engine="auto" if tried else "agent", candidates_tried=tried,
                        search=prior.search() if prior else None)
