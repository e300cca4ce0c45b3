"""The agent loop: ask the model, run the tools it asked for, until it finishes or a guard stops it.

Planned action for each normalised stop of a reply:
    finished   -> end the run (after two checks: tool calls written as JSON in the text are run instead;
                  before any edit, a corrected function shown in prose gets one note on applying it, and
                  any other ending gets the note a give_up before any edit gets, once per run)
    wants_tool -> run every tool call in order, send each result back under its tool_call_id, ask again
                  (a corrected function shown beside calls that edit nothing gets the same one note)
    cut_off    -> run nothing (a cut-off call may be half written); end with reason cut_off
    blocked    -> run nothing; end with reason model_error (the provider refused to answer)
    unknown    -> run nothing; end with reason model_error (an unknown stop cannot be acted on safely)
A reply that ends the run this way is traced but never enters the history, so the history never holds
a tool call without its result. Guards (rounds, cost, wall clock) are checked before each model call,
the repeat guard after each tool call; the wall clock also bounds a model or tool call in progress
(abandoned when it runs past; a tool call's box is killed). Exceptions other than ModelError (sandbox
broken, model endpoint unreachable, the job cancelled) propagate and end the job.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from patcher.agent import prompts
from patcher.agent.context import fit
from patcher.agent.guards import Guards, Limits
from patcher.agent.nudges import Briefing, Nudges
from patcher.agent.outcome import AgentResult
from patcher.agent.telemetry import Telemetry
from patcher.agent.tools import (
    AGENT_TOOLS,
    GIVE_UP,
    SCHEMA_TOKENS,
    TOOL_SCHEMAS,
    calls_in_content,
    dispatch,
    give_up_reason,
)
from patcher.errors import ModelError
from patcher.model import LLM, ModelReply, ToolCall, estimate_tokens
from patcher.sandbox import Sandbox
from patcher.stopper import Overrun, Stopper
from patcher.trace import Trace

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

END_OF_REPLY = {"cut_off": ("cut_off", "the model's reply was cut off (length limit); nothing in it was run"),
                "blocked": ("model_error", "the model's reply was blocked by the provider's content filter"),
                "unknown": ("model_error", "the model stopped for a reason patcher does not know: {raw}")}


class Agent:
    def __init__(self, llm: LLM, box: Sandbox, trace: Trace, limits: Limits | None = None,
                 tracer_provider: TracerProvider | None = None, stopper: Stopper | None = None) -> None:
        self.box, self.trace = box, trace
        self.stopper = stopper or Stopper()
        self.otel = Telemetry(tracer_provider, trace.redact)
        self.llm = self.otel.model(llm)  # telemetry wraps the model and the tools; the loop calls them
        self.run_tool = self.otel.tools(dispatch)
        self.limits = limits or Limits()
        self.stats = AgentResult(reason="running", message="")
        self.guards = Guards(self.limits)
        self.nudges = Nudges()
        self.messages: list[dict[str, Any]] = []

    def run(self, task_text: str, briefing: Briefing | None = None) -> AgentResult:
        """`briefing` is what the task showed, repeated by the notes a give-up before any edit gets."""
        allowed = [" ".join(p) + " …" for p in self.box.allowlist]
        self.messages = [{"role": "system", "content": prompts.render("system", tools=AGENT_TOOLS, allowed=allowed)},
                         {"role": "user", "content": task_text}]
        self.stats = AgentResult(reason="running", message="")
        self.guards = Guards(self.limits)
        self.nudges = Nudges(briefing or Briefing())
        return self._loop(self.guards)

    def resume(self, note: str) -> AgentResult:
        """Go on after verification rejected the diff: its verdict is the next user message; the same limits
        (rounds, cost, wall clock) keep counting."""
        self.messages.append({"role": "user", "content": note})
        self.stats.reason, self.stats.final_text = "running", None
        return self._loop(self.guards)

    def _loop(self, guards: Guards) -> AgentResult:
        with self.otel.invoke_agent(self.llm):
            while True:
                if stop := guards.before_model_call(self.stats.rounds):
                    return self._end(*stop, guard=True)
                fit(self.messages, self.limits.context_tokens - SCHEMA_TOKENS, estimate_tokens)
                try:
                    reply = self.stopper.wait_for(partial(self.llm.complete, self.messages, TOOL_SCHEMAS),
                                                  guards.deadline)
                except ModelError as e:
                    return self._end("model_error", str(e))
                except Overrun:
                    return self._end("timeout", f"the model call outlived the wall-clock limit "
                                     f"({self.limits.timeout_s:.0f} s); it was abandoned", guard=True)
                calls = self._record(reply, guards)
                if reply.stop in END_OF_REPLY:
                    reason, text = END_OF_REPLY[reply.stop]
                    return self._end(reason, text.format(raw=reply.stop_raw))
                self.messages.append(_assistant_message(reply, calls))
                if not calls and not self._note(*self.nudges.finished(reply.content)):
                    self.stats.final_text = reply.content
                    return self._end("finished", "the model finished")
                if stop := self._run_tools(calls, guards):
                    return self._end(*stop, guard=stop[0] != "gave_up")
                self._note("prose_code", self.nudges.prose_code(reply.content))  # code shown beside other calls

    def _run_tools(self, calls: list[ToolCall], guards: Guards) -> tuple[str, str] | None:
        """Every call runs and gets its result, even after a guard tripped, so the history stays whole."""
        stop = None
        for call in calls:
            if call.name == GIVE_UP:  # the honest way out: answered here, never sent to the sandbox
                stop = stop or self._give_up(call)
                continue
            try:
                obs = self.stopper.wait_for(partial(self.run_tool, call, self.box), guards.deadline)
            except Overrun:
                self.stopper.kill(self.box)  # the call still blocks in its thread; killing the box ends it
                return "timeout", f"{call.name} outlived the wall-clock limit ({self.limits.timeout_s:.0f} s)"
            self.stats.tool_calls += 1
            self.nudges.observe(call.name, obs.is_error, obs.text)
            stop = stop or guards.after_tool_call(call.name, obs.args, obs.text)
            note = guards.repeat_note(call.name, obs.args)
            text = prompts.render("observation", is_error=obs.is_error, text=obs.text, note=note)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            self.trace.emit("tool_call", round=self.stats.rounds, call_id=call.id, tool=call.name, args=obs.args,
                            is_error=obs.is_error, result=text[:2000], duration_ms=round(obs.duration_ms, 2),
                            repaired=obs.repaired)
        return stop

    def _give_up(self, call: ToolCall) -> tuple[str, str] | None:
        """Ends the run, except the first give_up before any edit: that one is answered with a nudge to try."""
        reason = give_up_reason(call)
        note = self.nudges.give_up(reason)
        self.stats.tool_calls += 1
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": note or "run ended"})
        self.trace.emit("tool_call", round=self.stats.rounds, call_id=call.id, tool=call.name,
                        args={"reason": reason}, is_error=False, result=(note or "run ended")[:2000], duration_ms=0.0)
        if self._note("give_up", note, call.id):
            return None
        return "gave_up", f"the agent gave up: {reason}"

    def _note(self, kind: str, note: str | None, call_id: str | None = None) -> bool:
        """Traces a nudge (a tool result already carries a give_up's; prose gets it as the next user message)."""
        if note is None:
            return False
        if call_id is None:
            self.messages.append({"role": "user", "content": note})
        self.trace.emit("nudge", round=self.stats.rounds, kind=kind, call_id=call_id, note=note[:2000])
        return True

    def _record(self, reply: ModelReply, guards: Guards) -> list[ToolCall]:
        """Counts and traces one reply; returns the calls to run (native, else JSON written in the text)."""
        s = self.stats
        s.rounds += 1
        s.tokens_in += reply.tokens_in
        s.tokens_out += reply.tokens_out
        guards.add_cost(reply.cost_usd)
        s.cost_usd = guards.cost_usd if guards.cost_known else None
        s.stops.append(reply.stop)
        from_text = calls_in_content(reply.content, f"content_r{s.rounds}") if reply.stop == "finished" else []
        calls = from_text or reply.tool_calls
        self.trace.emit("model_call", round=s.rounds, model=reply.model, stop_raw=reply.stop_raw, stop=reply.stop,
                        tokens={"input": reply.tokens_in, "output": reply.tokens_out}, cost=reply.cost_usd,
                        duration_ms=reply.duration_ms, attempts=reply.attempts, prompt_hash=prompts.template_hash(),
                        tool_calls=[{"id": c.id, "name": c.name, "args": c.arguments_raw} for c in calls],
                        calls_in_content=bool(from_text), content=reply.content)
        return calls

    def _end(self, reason: str, message: str, guard: bool = False) -> AgentResult:
        if guard:
            self.trace.emit("guard_stop", reason=reason, message=message, round=self.stats.rounds)
        self.stats.reason, self.stats.message = reason, message
        self.otel.ended(self.stats)
        return self.stats


def _assistant_message(reply: ModelReply, calls: list[ToolCall]) -> dict[str, Any]:
    """The reply as history; calls found in the text are written back as real tool calls so ids match."""
    if calls is reply.tool_calls or not calls:
        return reply.message
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_raw}}
        for c in calls]}
