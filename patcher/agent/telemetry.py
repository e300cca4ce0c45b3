"""OpenTelemetry spans for agent runs, per the GenAI semantic conventions; a no-op unless configured.

    invoke_agent patcher          the run (gen_ai.operation.name=invoke_agent, gen_ai.conversation.id=run id)
    ├── chat <model>              one per model call: request/response model, tokens, finish reasons
    ├── execute_tool <name>       one per tool call: gen_ai.tool.name, gen_ai.tool.call.id, linked to its chat
    └── …

Configured means: a tracer provider passed in, else the standard environment (`OTEL_TRACES_EXPORTER`,
or an `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, which implies otlp), else a global provider an application
installed. Exporters are found by name through the SDK's entry points, so whichever is installed
(console ships with the SDK; otlp with opentelemetry-exporter-otlp) works. Otherwise the API's no-op
tracer is used and no attribute is computed.

Tool arguments and results, and the model's reply, go on spans only when opted in
(`PATCHER_OTEL_CAPTURE_CONTENT=1`, or the GenAI instrumentations' `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`),
and then pass through the run's Redactor first.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel
from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider

from patcher.trace import Redactor, current_run_id

if TYPE_CHECKING:
    from patcher.agent.outcome import AgentResult
    from patcher.agent.tools import Observation
    from patcher.model import LLM, ModelReply, ToolCall
    from patcher.sandbox import Sandbox

log = logging.getLogger(__name__)
CAPTURE_ENV = ("PATCHER_OTEL_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
_TRUE = {"1", "true", "yes", "on"}


def capture_from_env() -> bool:
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in CAPTURE_ENV)


def configured_provider() -> TracerProvider | None:
    """The provider the environment asks for, or a global one already installed; None when not configured."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    names = os.environ.get("OTEL_TRACES_EXPORTER") or ("otlp" if endpoint else "")
    names = ",".join(n.strip() for n in names.split(",") if n.strip() and n.strip() != "none")
    if names:
        return _env_provider(names)
    installed = otel.get_tracer_provider()
    return None if isinstance(installed, otel.ProxyTracerProvider | otel.NoOpTracerProvider) else installed


@functools.cache
def _env_provider(names: str) -> TracerProvider | None:
    """One SDK provider per process and exporter list (it flushes at exit); None if no exporter is installed."""
    from importlib.metadata import entry_points

    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = SdkProvider(resource=Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "patcher")}))
    found = 0
    for name in names.split(","):
        points = entry_points(group="opentelemetry_traces_exporter", name=name)
        if not points:
            log.warning("OpenTelemetry exporter %r is not installed; its spans are dropped", name)
            continue
        provider.add_span_processor(BatchSpanProcessor(next(iter(points)).load()()))
        found += 1
    return provider if found else None


class Telemetry:
    """Spans of one agent run. With no provider configured every method is a cheap pass-through."""

    def __init__(self, tracer_provider: TracerProvider | None = None, redactor: Redactor | None = None,
                 capture_content: bool | None = None) -> None:
        provider = tracer_provider or configured_provider()
        self.tracer: Tracer = provider.get_tracer("patcher") if provider else otel.NoOpTracer()
        self.enabled = provider is not None
        self.capture = capture_from_env() if capture_content is None else capture_content
        self.redact = redactor or Redactor()
        self._agent: Span = otel.INVALID_SPAN
        self._chat: Span = otel.INVALID_SPAN

    @contextmanager
    def invoke_agent(self, llm: LLM) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "patcher",
                 "gen_ai.provider.name": _provider(llm), "gen_ai.conversation.id": current_run_id() or ""}
        if model := _request_model(llm):
            attrs["gen_ai.request.model"] = model
        with self.tracer.start_as_current_span("invoke_agent patcher", kind=SpanKind.INTERNAL,
                                               attributes=attrs) as span:
            self._agent = span
            try:
                yield
            finally:
                self._agent = otel.INVALID_SPAN

    def ended(self, result: AgentResult) -> None:
        if self._agent.is_recording():
            self._agent.set_attributes({
                "gen_ai.usage.input_tokens": result.tokens_in, "gen_ai.usage.output_tokens": result.tokens_out,
                "patcher.agent.reason": result.reason, "patcher.agent.rounds": result.rounds,
                "patcher.agent.tool_calls": result.tool_calls})
            if result.reason not in ("finished", "running"):
                self._agent.set_attribute("error.type", result.reason)

    def chat(self, llm: LLM, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        """llm.complete() inside a `chat <model>` span (the span records a ModelError and re-raises it)."""
        if not self.enabled:
            return llm.complete(messages, tools)
        model = _request_model(llm)
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": _provider(llm)}
        if model:
            attrs["gen_ai.request.model"] = model
        with self.tracer.start_as_current_span(f"chat {model}".strip(), kind=SpanKind.CLIENT,
                                               attributes=attrs) as span:
            self._chat = span
            reply = llm.complete(messages, tools)
            if not model:
                span.update_name(f"chat {reply.model}")
            span.set_attributes({
                "gen_ai.response.model": reply.model, "gen_ai.usage.input_tokens": reply.tokens_in,
                "gen_ai.usage.output_tokens": reply.tokens_out,
                "gen_ai.response.finish_reasons": [reply.stop_raw or ""],
                "patcher.stop": reply.stop, "patcher.tool_call_ids": [c.id for c in reply.tool_calls]})
            if self.capture:
                span.set_attribute("gen_ai.output.messages", self._json([_output_message(reply)]))
            return reply

    def execute_tool(self, call: ToolCall, run: Callable[[], Observation]) -> Observation:
        """run() inside an `execute_tool <name>` span linked to the chat span that asked for the call."""
        if not self.enabled:
            return run()
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                 "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function"}
        asked_by = self._chat.get_span_context()
        links = [otel.Link(asked_by, {"gen_ai.tool.call.id": call.id})] if asked_by.is_valid else []
        with self.tracer.start_as_current_span(f"execute_tool {call.name}", kind=SpanKind.INTERNAL,
                                               attributes=attrs, links=links) as span:
            obs = run()
            if obs.is_error:
                span.set_attribute("error.type", "tool_error")
            if self.capture:
                span.set_attributes({"gen_ai.tool.call.arguments": self._json(obs.args),
                                     "gen_ai.tool.call.result": self.redact.text(obs.text)})
            return obs

    def model(self, llm: LLM) -> TracedLLM:
        return TracedLLM(llm, self)

    def tools(self, dispatch: Callable[[ToolCall, Sandbox], Observation]) -> Callable[[ToolCall, Sandbox], Observation]:
        """`dispatch` with each call inside an `execute_tool <name>` span."""
        return lambda call, box: self.execute_tool(call, functools.partial(dispatch, call, box))

    def _json(self, value: Any) -> str:
        return self.redact.text(json.dumps(self.redact(value), ensure_ascii=False, default=str))


class TracedLLM:
    """The model client with each complete() inside a `chat <model>` span: the loop calls it directly."""

    def __init__(self, llm: LLM, telemetry: Telemetry) -> None:
        self.inner, self.telemetry = llm, telemetry

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        return self.telemetry.chat(self.inner, messages, tools)


def _request_model(llm: LLM) -> str:
    return llm.model_name


def _provider(llm: LLM) -> str:
    return llm.provider or "openai"


def _output_message(reply: ModelReply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": reply.content}] if reply.content else []
    parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments_raw}
              for c in reply.tool_calls]
    return {"role": "assistant", "parts": parts, "finish_reason": reply.stop_raw or ""}
