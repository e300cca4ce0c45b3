"""Who proposes the fix, behind one seam: `Engine.propose(job, run) -> Proposal`.

    TemplateEngine   fix templates tried in one box (patcher/repair), no model
    AgentEngine      the LLM agent, re-told why when verification rejects its diff (up to `attempts`)
    AutoEngine       the agent at once, the templates beside it on a bounded CPU share (patcher/race.py);
                     the first verified diff stops the other side, the templates' preferred when both have one

Each engine verifies what it proposes (the same `verify_job` as `patcher verify`), so a Proposal is a
verdict, and the pipeline only writes it down; then `review` adds a reader's hint to a verified one (the
agent's model, in a fresh context: agent/review.py; the template engine has no model and adds none).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from patcher.agent import (
    STRIKES,
    Agent,
    AgentResult,
    Limits,
    attempt_record,
    briefing,
    diff_digest,
    review_diff,
    reviewer_model,
    task_text,
    verdict_note,
)
from patcher.model import LLM, ModelConfig, OpenAIModel, ProgressHook, StreamProgress
from patcher.prepare import EngineContext, verify_job
from patcher.race import Side
from patcher.repair import TemplateSearch, diff_warnings, search_templates, suspects_for
from patcher.result import AgentSummary, Reason, as_reason
from patcher.sandbox import Sandbox, diff_of
from patcher.trace import Trace
from patcher.verify import Job, Verification

AUTO_LIMIT = 40
AUTO_BUDGET_S = 45.0
AUTO_SHARE_S = 20.0
"""In auto mode the template engine gets about AUTO_SHARE_S seconds of checks (their number sized from the
measured time of one, at most AUTO_LIMIT) and AUTO_BUDGET_S in all, beside the agent."""
AUTO_CPUS = 0.5
"""The CPUs (Docker nano_cpus) of the template search's boxes while the agent works beside it."""


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
    search: TemplateSearch | None = None
    """The template search, when one ran (its coverage ranking goes to the engine that comes next)."""
    source: str = ""
    """The engine that made the diff: offline or agent."""
    spend: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each engine that ran spent, by name: offline {seconds, checks, stopped}, agent {seconds, rounds}."""

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.status == "verified"

    @property
    def proved(self) -> bool:
        """Verified, or unjudged: the tests prove the diff (a judge could not judge it)."""
        return self.verification is not None and self.verification.status in ("verified", "unjudged")

    @property
    def engine(self) -> str | None:
        """The engine whose diff the tests proved (None: none)."""
        return self.source if self.proved else None


class Engine(Protocol):
    def propose(self, job: Job, run: EngineContext) -> Proposal: ...

    def review(self, job: Job, run: EngineContext, proposal: Proposal) -> None:
        """A reader's hint on a verified proposal, recorded in its verification (or nothing)."""
        ...


@dataclass(frozen=True)
class TemplateEngine:
    limit: int = 200
    budget_s: float = 120.0
    share_s: float | None = None
    """Size the number of checks to about this many seconds of them (auto mode)."""

    def applies(self, job: Job) -> bool:
        """Templates need a parsed traceback and a reproduction that failed on the base."""
        return job.parsed is not None and job.repro is not None and job.base.repro is not None

    def propose(self, job: Job, run: EngineContext) -> Proposal:
        if not self.applies(job):
            return Proposal("not_reproduced", "the offline engine needs a reproduction: pass --test CMD (or a "
                            "pytest traceback naming the failing test)", AgentSummary(engine="offline"))
        started = time.monotonic()
        run.progress("offline engine: trying fix templates against the reproduction")
        with job.open_box(job.staged) as box:
            found = search_templates(job, box, self.limit, self.budget_s, self.share_s)
        run.trace.emit("offline", tried=found.tried, generated=found.generated, stopped=found.stopped,
                       seconds=round(found.seconds, 3), template=found.candidate.template if found.candidate else None)
        summary = AgentSummary(stop=found.stopped, engine="offline", candidates_tried=found.tried,
                               search=found.search())
        p = Proposal("no_change", found.summary(), summary, search=found, source="offline")
        if found.diff:
            run.progress("verifying the diff in fresh containers")
            ver = verify_job(job, found.diff, run.trace)
            p = replace(p, reason=ver.reason, message=f"{found.summary()}; {ver.message}", diff=found.diff,
                        verification=ver, warnings=ver.warnings)
        p.spend["offline"] = {"seconds": round(time.monotonic() - started, 2), "checks": found.tried,
                              "stopped": found.stopped}
        return p

    def review(self, job: Job, run: EngineContext, proposal: Proposal) -> None:
        """No model, no reader (offline mode)."""


def _stream_events(trace: Trace) -> ProgressHook:
    """The trace's `model_stream` events: how a streaming reply is going, about once a second (live pages)."""
    def emit(p: StreamProgress) -> None:
        trace.emit("model_stream", chunks=p.chunks, chars=p.chars, seconds=p.seconds, tool_calls=p.tool_calls,
                   tail=p.tail)

    return emit


@dataclass(frozen=True)
class AgentEngine:
    limits: Limits
    attempts: int = 3
    llm: LLM | None = None
    model: ModelConfig | None = None
    """Used when no `llm` is given (None: the environment's), read only when the agent is first needed."""
    reviews: bool = True
    """Whether a verified diff gets the model's fresh-context review (a hint)."""

    def propose(self, job: Job, run: EngineContext, prior: Proposal | None = None) -> Proposal:
        started = time.monotonic()
        p = self._propose(job, run, prior)
        p.spend["agent"] = {"seconds": round(time.monotonic() - started, 2), "rounds": p.summary.rounds,
                            "cost_usd": p.summary.cost_usd}
        return p

    def review(self, job: Job, run: EngineContext, proposal: Proposal) -> None:
        """The job's model reads the verified diff (whoever wrote it) in a fresh context: one call, a hint. Not
        asked once the agent's spend has reached the cost limit."""
        if not (self.reviews and proposal.proved and proposal.verification is not None):
            return
        run.stopper.check()
        spent = proposal.spend.get("agent", {}).get("cost_usd") or 0.0
        over = self.limits.max_cost_usd is not None and spent >= self.limits.max_cost_usd
        run.progress("a reviewer model reads the verified diff")
        with contextlib.ExitStack() as own:
            llm = self.llm or own.enter_context(reviewer_model(self.model or ModelConfig.from_env()))
            review_diff(llm, job, proposal.diff, proposal.verification, run.trace, run.stopper, over)

    def _propose(self, job: Job, run: EngineContext, prior: Proposal | None) -> Proposal:
        with contextlib.ExitStack() as own:
            llm = self.llm or own.enter_context(OpenAIModel(self.model or ModelConfig.from_env(),
                                                            on_progress=_stream_events(run.trace)))
            run.progress("agent at work in the sandbox")
            suspects = prior.search.suspects if prior and prior.search else suspects_for(job)
            run.stopper.check()
            box = own.enter_context(job.open_box(job.staged))
            agent = Agent(llm, box, run.trace, self.limits, stopper=run.stopper)
            redact = run.trace.redact.text
            outcome = agent.run(task_text(job, suspects, self.limits.context_tokens, redact),
                                briefing(job, suspects, redact))
            outcome, diff, ver, attempts = _until_verified(agent, outcome, box, job, run, self.attempts)
        summary = _summary(outcome, prior.search if prior else None)
        if outcome.reason == "gave_up":  # the agent's own answer: nothing it changed is verified or handed out
            return Proposal("gave_up", outcome.message, summary, attempts=attempts, source="agent")
        if ver is None:
            reason = "no_change" if outcome.reason == "finished" else as_reason(outcome.reason)
            return Proposal(reason, f"no change was made ({outcome.message})", summary, attempts=attempts,
                            source="agent")
        proved = ver.status in ("verified", "unjudged")
        reason = ver.reason if proved or outcome.reason == "finished" else as_reason(outcome.reason)
        message = ver.message if reason == ver.reason else f"{outcome.message}; {ver.message}"
        return Proposal(reason, message, summary, diff, ver, attempts,
                        [*diff_warnings(diff, job.staged.path, job.parsed), *ver.warnings], source="agent")


@dataclass(frozen=True)
class AutoEngine:
    """The agent at once; the templates beside it (their own boxes on `cpus`, within a small budget). The
    first verified diff stops the other side; when both have one, the templates' is taken (no model wrote it)."""

    first: TemplateEngine
    then: AgentEngine
    cpus: float = AUTO_CPUS

    @classmethod
    def sized(cls, limit: int, budget_s: float, then: AgentEngine) -> AutoEngine:
        """Templates within auto's share (the caller's limit and budget as caps), beside `then`."""
        return cls(TemplateEngine(min(limit, AUTO_LIMIT), min(budget_s, AUTO_BUDGET_S), AUTO_SHARE_S), then)

    def propose(self, job: Job, run: EngineContext) -> Proposal:
        if not self.first.applies(job):
            return self.then.propose(job, run)
        agent: Side[Proposal] = Side(job, run.stopper)
        offline: Side[Proposal] = Side(job, run.stopper, self.cpus)

        def offline_ended(side: Side[Proposal]) -> None:
            if side.result is not None and side.result.verified:
                agent.stop("offline_verified")

        offline.start(lambda j, s: self.first.propose(j, replace(run, stopper=s)), offline_ended)
        agent.run(lambda j, s: self.then.propose(j, replace(run, stopper=s)))
        mine = agent.result
        theirs_first = offline.done and offline.result is not None and offline.result.verified
        if mine is not None and mine.verified and not theirs_first:
            offline.stop("agent_verified")
        offline.wait()  # on its own budget when the agent verified nothing: "after the agent ends without one"
        run.stopper.check()
        return _settled(offline, agent)

    def review(self, job: Job, run: EngineContext, proposal: Proposal) -> None:
        """The agent's model reads the verified diff, the templates' too."""
        self.then.review(job, run, proposal)


def _settled(offline: Side[Proposal], agent: Side[Proposal]) -> Proposal:
    """The verified side's proposal (the templates' first), else the agent's; with what each side spent."""
    theirs, mine = offline.result, agent.result
    spend = {"offline": _spent(offline, "offline"), "agent": _spent(agent, "agent")}
    if theirs is not None and (theirs.verified or (theirs.proved and not (mine is not None and mine.verified))):
        return replace(theirs, spend=spend)  # a verified diff first, the templates' first; then one the tests proved
    if mine is None:  # the agent failed (not stopped: only a verified template diff stops it)
        assert agent.error is not None
        raise agent.error
    summary = replace(mine.summary, engine="auto")
    if theirs is not None and theirs.search is not None:
        found = theirs.search
        summary = replace(summary, candidates_tried=found.tried, search=found.search())
    return replace(mine, spend=spend, summary=summary)


def _spent(side: Side[Proposal], name: str) -> dict[str, Any]:
    own = dict(side.result.spend.get(name, {})) if side.result is not None else {}
    own["seconds"] = round(side.seconds, 2)
    if side.stopped_by or side.result is None:
        own["stopped"] = side.stopped_by or "error"
        own.setdefault("checks" if name == "offline" else "rounds", None)
    return own


def _until_verified(agent: Agent, outcome: AgentResult, box: Sandbox, job: Job, run: EngineContext, allowed: int
                    ) -> tuple[AgentResult, str, Verification | None, list[dict[str, Any]]]:
    """Verify the agent's diff; while rejected (and the agent finished on its own, within `allowed`
    verifications), tell it why and let it go on. A diff unchanged since the last verdict is not re-run.
    One strike: a diff refused as gaming the verification (STRIKES) ends the job at once."""
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
        if ver.status in ("verified", "unjudged") or outcome.reason != "finished" or len(attempts) >= allowed:
            return outcome, diff, ver, attempts
        if ver.reason in STRIKES:
            run.progress(f"attempt {len(attempts)} refused ({ver.reason}) as gaming the verification: the job ends")
            return outcome, diff, ver, attempts
        run.progress(f"attempt {len(attempts)} rejected ({ver.reason}): the agent hears why")
        outcome = agent.resume(verdict_note(ver, len(attempts), allowed))


def _summary(outcome: AgentResult, prior: TemplateSearch | None) -> AgentSummary:
    tried = prior.tried if prior else 0
    return AgentSummary(rounds=outcome.rounds, tool_calls=outcome.tool_calls, stop=outcome.reason,
                        tokens={"input": outcome.tokens_in, "output": outcome.tokens_out}, cost_usd=outcome.cost_usd,
                        engine="auto" if tried else "agent", candidates_tried=tried,
                        search=prior.search() if prior else None)
