"""OpenTelemetry spans of a real agent run (openai client, ScriptedModelServer, LocalSandbox), read from the
SDK's in-memory exporter: GenAI attributes, the span tree, call ids, and content only when opted in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, SpanKind

from patcher.agent import Agent, AgentResult, Limits
from patcher.agent.telemetry import Telemetry, configured_provider
from patcher.intake import StagedRepo, stage_repo
from patcher.model import OpenAIModel
from patcher.sandbox import LocalSandbox
from patcher.testing import ScriptedModelServer, reply
from patcher.trace import Redactor, Trace
from patcher.trace.log import REDACTED
from tests.support.helpers import make_repo

SECRET = "hunter2-planted-Zq81"
SOURCE = "def total(items):\n    return sum(i['price'] for i in items)\n"
OTEL_ENV = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "PATCHER_OTEL_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_SDK_DISABLED")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagedRepo]:
    repo = make_repo(tmp_path_factory.mktemp("otel") / "shop", {"shop.py": SOURCE})
    s = stage_repo(str(repo))
    yield s
    s.cleanup()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def run_agent(staged: StagedRepo, tmp_path: Path, provider: TracerProvider | None) -> tuple[AgentResult, Agent]:
    steps = [reply("Looking.", [("read_file", {"path": "shop.py"}),
                                ("write_file", {"path": "notes.txt", "content": f"password is {SECRET}"})]),
             reply(None, [("run_test", {"command": "python -m pytest -q"})]),
             reply(f"Done; the secret was {SECRET}.")]
    with ScriptedModelServer(steps) as server, OpenAIModel(server.model_config()) as model, \
            LocalSandbox(staged) as box, Trace(tmp_path / "run.jsonl", "otel-run", Redactor([SECRET])) as trace:
        agent = Agent(model, box, trace, Limits(), tracer_provider=provider)
        return agent.run("fix it"), agent


def spans_of(exporter: InMemorySpanExporter, staged: StagedRepo, tmp_path: Path
             ) -> tuple[AgentResult, dict[str, list[ReadableSpan]]]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result, _ = run_agent(staged, tmp_path, provider)
    by_op: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        by_op.setdefault(str((span.attributes or {})["gen_ai.operation.name"]), []).append(span)
    return result, by_op


def test_the_run_is_an_agent_span_with_chat_and_execute_tool_children(
        staged: StagedRepo, tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    result, spans = spans_of(exporter, staged, tmp_path)
    assert (result.reason, result.rounds, result.tool_calls) == ("finished", 3, 3)
    [agent] = spans["invoke_agent"]
    chats, tools = spans["chat"], spans["execute_tool"]
    assert agent.name == "invoke_agent patcher" and agent.parent is None
    assert agent.attributes is not None and agent.attributes["gen_ai.agent.name"] == "patcher"
    assert agent.attributes["gen_ai.conversation.id"] == "otel-run"
    assert agent.attributes["gen_ai.usage.input_tokens"] == result.tokens_in
    assert agent.attributes["patcher.agent.reason"] == "finished"
    assert [s.name for s in chats] == ["chat scripted-model"] * 3
    assert [s.name for s in tools] == ["execute_tool read_file", "execute_tool write_file", "execute_tool run_test"]
    for span in chats + tools:
        assert span.parent is not None and span.parent.span_id == agent.context.span_id
        assert span.context.trace_id == agent.context.trace_id
    first = chats[0].attributes or {}
    assert chats[0].kind == SpanKind.CLIENT
    assert (first["gen_ai.request.model"], first["gen_ai.response.model"]) == ("scripted-model", "scripted-model")
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    used = [(s.attributes or {}) for s in chats]
    assert sum(int(str(a["gen_ai.usage.input_tokens"])) for a in used) == result.tokens_in
    assert sum(int(str(a["gen_ai.usage.output_tokens"])) for a in used) == result.tokens_out
    assert (chats[2].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)


def test_tool_spans_carry_the_call_ids_the_chat_span_asked_for(
        staged: StagedRepo, tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    _, spans = spans_of(exporter, staged, tmp_path)
    chats, tools = spans["chat"], spans["execute_tool"]
    ids = [(s.attributes or {})["gen_ai.tool.call.id"] for s in tools]
    assert ids == ["call_1", "call_2", "call_3"]
    assert (chats[0].attributes or {})["patcher.tool_call_ids"] == ("call_1", "call_2")
    assert (chats[1].attributes or {})["patcher.tool_call_ids"] == ("call_3",)
    for tool, chat in zip(tools, [chats[0], chats[0], chats[1]], strict=True):
        [link] = tool.links
        assert link.context.span_id == chat.context.span_id
        assert (link.attributes or {})["gen_ai.tool.call.id"] == (tool.attributes or {})["gen_ai.tool.call.id"]
        assert (tool.attributes or {})["gen_ai.tool.name"] == tool.name.removeprefix("execute_tool ")


def test_content_is_absent_by_default(staged: StagedRepo, tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    spans_of(exporter, staged, tmp_path)
    for span in exporter.get_finished_spans():
        attrs = span.attributes or {}
        assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.output.messages"} & set(attrs)
        assert SECRET not in json.dumps(dict(attrs), default=str)


def test_opted_in_content_is_there_and_redacted(staged: StagedRepo, tmp_path: Path, exporter: InMemorySpanExporter,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHER_OTEL_CAPTURE_CONTENT", "1")
    _, spans = spans_of(exporter, staged, tmp_path)
    read, write, test = (s.attributes or {} for s in spans["execute_tool"])
    assert json.loads(str(read["gen_ai.tool.call.arguments"])) == {"path": "shop.py"}
    assert "return sum(i['price'] for i in items)" in str(read["gen_ai.tool.call.result"])
    assert json.loads(str(write["gen_ai.tool.call.arguments"])) == {"path": "notes.txt",
                                                                     "content": f"password is {REDACTED}"}
    assert "exit code" in str(test["gen_ai.tool.call.result"]).lower()
    final = json.loads(str((spans["chat"][2].attributes or {})["gen_ai.output.messages"]))
    assert final == [{"role": "assistant", "parts": [{"type": "text", "content": f"Done; the secret was {REDACTED}."}],
                      "finish_reason": "stop"}]
    asked = json.loads(str((spans["chat"][0].attributes or {})["gen_ai.output.messages"]))
    assert [p["type"] for p in asked[0]["parts"]] == ["text", "tool_call", "tool_call"]
    everything = json.dumps([dict(s.attributes or {}) for s in exporter.get_finished_spans()], default=str)
    assert SECRET not in everything and REDACTED in everything


def test_nothing_is_exported_without_a_configured_provider(
        staged: StagedRepo, tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    unused = TracerProvider()
    unused.add_span_processor(SimpleSpanProcessor(exporter))
    assert configured_provider() is None
    result, agent = run_agent(staged, tmp_path, None)
    assert (result.reason, result.tool_calls) == ("finished", 3)
    assert isinstance(agent.otel.tracer, NoOpTracer) and not agent.otel.enabled
    assert exporter.get_finished_spans() == ()


def test_the_environment_configures_an_exporter_by_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert isinstance(configured_provider(), TracerProvider) and Telemetry().enabled
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert configured_provider() is None
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert configured_provider() is None
