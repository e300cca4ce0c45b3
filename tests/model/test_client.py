"""The model seam over real HTTP: the real openai client against ScriptedModelServer. No mocks."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from patcher.errors import BadInput, ModelError, ModelUnreachable
from patcher.model import ModelConfig, OpenAIModel, estimate_tokens, normalise_stop
from patcher.testing import (
    NULL_FINISH,
    ScriptedModelServer,
    content_filter,
    cut_off,
    delay,
    http_error,
    malformed_args,
    reply,
)

USER = [{"role": "system", "content": "fix it"}, {"role": "user", "content": "Traceback: KeyError"}]
TOOLS = [{"type": "function", "function": {"name": name, "description": name,
                                           "parameters": {"type": "object", "properties": {}}}}
         for name in ("read_file", "search_code", "edit_file")]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def model(server: ScriptedModelServer) -> Iterator[OpenAIModel]:
    with OpenAIModel(server.model_config()) as m:
        yield m


def test_plain_reply(server: ScriptedModelServer) -> None:
    server.add(reply("The bug is in parse().", usage=(1000, 200)))
    with OpenAIModel(server.model_config(model="gpt-4o-mini")) as m:
        r = m.complete(USER, TOOLS)
    assert (r.content, r.tool_calls, r.stop_raw, r.stop) == ("The bug is in parse().", [], "stop", "finished")
    assert (r.tokens_in, r.tokens_out, r.tokens_estimated, r.attempts) == (1000, 200, False, 1)
    assert r.cost_usd == pytest.approx((1000 * 0.15 + 200 * 0.60) / 1e6)
    assert r.model == "gpt-4o-mini"
    assert r.message == {"role": "assistant", "content": "The bug is in parse()."}
    assert r.duration_ms >= 0


def test_tool_calls_parsed_with_ids(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(reply("Looking.", [("read_file", {"path": "a.py"}), ("search_code", {"pattern": "KeyError"}),
                                  ("read_file", '{"path": "b.py", "start_line": 3}')]),
               reply(tool_calls=[("git_diff", {})]))
    r = model.complete(USER, TOOLS)
    assert r.stop == "wants_tool" and r.stop_raw == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments_raw)) for c in r.tool_calls] == [
        ("call_1", "read_file", {"path": "a.py"}),
        ("call_2", "search_code", {"pattern": "KeyError"}),
        ("call_3", "read_file", {"path": "b.py", "start_line": 3})]
    assert r.message["content"] == "Looking."
    assert r.message["tool_calls"][2] == {"id": "call_3", "type": "function", "function": {
        "name": "read_file", "arguments": '{"path": "b.py", "start_line": 3}'}}
    history = [*USER, r.message, *({"role": "tool", "tool_call_id": c.id, "content": "x"} for c in r.tool_calls)]
    again = model.complete(history, TOOLS)
    assert [c.id for c in again.tool_calls] == ["call_4"]
    assert server.chat_requests[1]["messages"][2]["tool_calls"][0]["id"] == "call_1"


def test_server_errors_are_retried(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(http_error(500), http_error(502), http_error(503), reply("ok"))
    r = model.complete(USER, TOOLS)
    assert (r.content, r.attempts) == ("ok", 4)
    assert len(server.chat_requests) == 4


def test_bad_request_is_not_retried(server: ScriptedModelServer, model: OpenAIModel) -> None:
    body = {"error": {"message": "Invalid schema for function 'read_file'", "type": "invalid_request_error"}}
    server.add(http_error(400, body), reply("never"))
    with pytest.raises(ModelError, match=r"HTTP 400 .*Invalid schema for function 'read_file'") as info:
        model.complete(USER, TOOLS)
    assert "\n" not in str(info.value) and info.value.exit_code == 1
    assert len(server.chat_requests) == 1


def test_wrong_key_is_not_retried() -> None:
    with ScriptedModelServer([reply("never")], api_key="sk-right") as srv:
        with OpenAIModel(srv.model_config(api_key="sk-wrong")) as m, pytest.raises(ModelError, match="401"):
            m.complete(USER, TOOLS)
        assert len(srv.requests) == 1


def test_rate_limit_honours_retry_after(server: ScriptedModelServer) -> None:
    server.add(http_error(429, retry_after=0), http_error(429, retry_after="0.3"),
               http_error(429, retry_after=600), reply("ok"))
    with OpenAIModel(server.model_config(retry_initial_s=0, retry_max_s=0, retry_after_cap_s=0.4)) as m:
        started = time.monotonic()
        r = m.complete(USER, TOOLS)
    assert (r.content, r.attempts) == ("ok", 4)
    assert 0.7 <= time.monotonic() - started < 2  # waited the 0.3 s asked for; 600 s capped to 0.4


def test_rate_limit_exhausted_is_model_error(server: ScriptedModelServer) -> None:
    server.add(*[http_error(429, retry_after=0)] * 3)
    with OpenAIModel(server.model_config(max_retries=2)) as m, pytest.raises(ModelError, match="HTTP 429"):
        m.complete(USER, TOOLS)
    assert server.remaining == 0


def test_a_server_still_silent_at_the_idle_deadline_is_not_asked_again(server: ScriptedModelServer) -> None:
    server.add(delay(1.0, reply("too late")), reply("never asked"))
    with OpenAIModel(server.model_config(idle_timeout_s=0.3)) as m, pytest.raises(ModelError) as info:
        m.complete(USER, TOOLS)
    assert "sent nothing for 0.3s (the idle deadline, PATCHER_MODEL_IDLE_TIMEOUT_S)" in str(info.value)
    assert len(server.chat_requests) == 1 and server.remaining == 1


def test_connection_refused_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    config = ModelConfig(base_url=url, max_retries=2, retry_initial_s=0.01, retry_max_s=0.02)
    with OpenAIModel(config) as m, pytest.raises(ModelUnreachable, match=f"127.0.0.1:{port}") as info:
        m.complete(USER, TOOLS)
    assert info.value.exit_code == 3 and info.value.reason == "model_error"
    assert "3 attempt(s)" in str(info.value) and "\n" not in str(info.value)


def test_cut_off_reply(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(cut_off("edit_file", '{"path": "src/ma'))
    r = model.complete(USER, TOOLS)
    assert (r.stop_raw, r.stop) == ("length", "cut_off")
    assert r.tool_calls[0].arguments_raw == '{"path": "src/ma'


def test_content_filter_is_blocked(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(content_filter())
    r = model.complete(USER, TOOLS)
    assert (r.stop_raw, r.stop, r.content) == ("content_filter", "blocked", None)
    assert r.message == {"role": "assistant", "content": ""}


def test_stop_with_tool_calls_wants_tool(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(reply(tool_calls=[("read_file", {"path": "a.py"})], finish_reason="stop"),
               reply(tool_calls=[("read_file", {"path": "a.py"})], finish_reason=NULL_FINISH),
               reply("hm", finish_reason=NULL_FINISH))
    assert [model.complete(USER, TOOLS).stop for _ in range(3)] == ["wants_tool", "wants_tool", "unknown"]


def test_malformed_arguments_are_passed_through(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(malformed_args("edit_file", "{'path': 'a.py',}"))
    r = model.complete(USER, TOOLS)
    assert r.stop == "wants_tool" and r.tool_calls[0].arguments_raw == "{'path': 'a.py',}"


@pytest.mark.parametrize(("finish", "has_calls", "stop"), [
    ("length", True, "cut_off"), ("length", False, "cut_off"), ("content_filter", True, "blocked"),
    ("tool_calls", True, "wants_tool"), ("function_call", True, "wants_tool"), ("tool_calls", False, "unknown"),
    ("stop", True, "wants_tool"), ("stop", False, "finished"), (None, True, "wants_tool"),
    (None, False, "unknown"), ("end_turn", True, "unknown"), ("eos", False, "unknown")])
def test_normalise_stop(finish: str | None, has_calls: bool, stop: str) -> None:
    assert normalise_stop(finish, has_calls) == stop


def test_unknown_model_costs_none_but_counts_tokens(server: ScriptedModelServer) -> None:
    server.add(reply("ok", usage=(50, 7)), reply("ok", usage=(1_000_000, 0), model="gpt-4.1-2025-04-14"))
    with OpenAIModel(server.model_config(model="mystery-7b")) as m:
        r = m.complete(USER, TOOLS)
        dated = m.complete(USER, TOOLS)
    assert (r.model, r.tokens_in, r.tokens_out, r.cost_usd) == ("mystery-7b", 50, 7, None)
    assert dated.cost_usd == pytest.approx(2.00)


def test_missing_usage_is_estimated(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(reply("x" * 400, send_usage=False))
    r = model.complete(USER, TOOLS)
    assert r.tokens_estimated and r.tokens_in >= estimate_tokens(USER) and r.tokens_out >= 100


def test_estimate_tokens_counts_tool_arguments() -> None:
    plain = [{"role": "user", "content": "a" * 400}]
    call = {"id": "c", "type": "function", "function": {"name": "write_file", "arguments": "b" * 4000}}
    assert estimate_tokens(plain) >= 100
    assert estimate_tokens([*plain, {"role": "assistant", "content": None, "tool_calls": [call]}]) >= 1100


def test_streaming_with_the_openai_client(server: ScriptedModelServer) -> None:
    server.add(reply("Reading the two files now.", [("read_file", {"path": "src/main.py"}),
                                                    ("search_code", {"pattern": "def parse"})],
                     usage=(321, 45)))
    client = openai.OpenAI(api_key="unused", base_url=server.base_url, max_retries=0)
    with client:
        request: Any = {"messages": USER, "tools": TOOLS, "stream_options": {"include_usage": True}}
        stream = client.chat.completions.create(model="m", stream=True, **request)
        content, finish, usage = "", None, None
        calls: dict[int, dict[str, Any]] = {}
        for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                content += choice.delta.content or ""
                finish = choice.finish_reason or finish
                for d in choice.delta.tool_calls or []:
                    call = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                    call["id"] = d.id or call["id"]
                    call["name"] += (d.function and d.function.name) or ""
                    call["arguments"] += (d.function and d.function.arguments) or ""
    assert content == "Reading the two files now." and finish == "tool_calls"
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("call_1", "read_file", {"path": "src/main.py"}), ("call_2", "search_code", {"pattern": "def parse"})]
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (321, 45)


def test_dynamic_steps_and_recorded_requests(server: ScriptedModelServer, model: OpenAIModel) -> None:
    server.add(*[lambda req: reply(f"seen {len(req['messages'])} messages")] * 2)
    assert model.complete(USER, TOOLS).content == "seen 2 messages"
    assert model.complete(USER[:1], []).content == "seen 1 messages"
    first, second = server.requests
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")
    assert first.headers["authorization"] == "Bearer unused"
    assert first.json["messages"] == USER and first.json["tools"] == TOOLS
    assert (first.json["tool_choice"], first.json["max_tokens"]) == ("auto", 4096)
    assert "tools" not in second.json and "tool_choice" not in second.json
    assert model.list_models() == ["scripted-model"]


def test_exhausted_script_answers_500(server: ScriptedModelServer) -> None:
    resp = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": USER})
    assert resp.status_code == 500
    assert "script exhausted" in resp.json()["error"]["message"]


def test_config_from_env() -> None:
    env = {"PATCHER_MODEL": "qwen2.5-coder", "OPENAI_BASE_URL": "http://localhost:8000/v1"}
    config = ModelConfig.from_env(env, max_tokens=1000, idle_timeout_s=None)
    assert (config.model, config.base_url, config.max_tokens, config.idle_timeout_s, config.stream) == (
        "qwen2.5-coder", "http://localhost:8000/v1", 1000, 120.0, True)
    slow = ModelConfig.from_env(env | {"PATCHER_MODEL_IDLE_TIMEOUT_S": "300", "PATCHER_MODEL_REPLY_TIMEOUT_S": "1800",
                                       "PATCHER_MODEL_STREAM": "0"})
    assert (slow.idle_timeout_s, slow.reply_timeout_s, slow.stream) == (300.0, 1800.0, False)
    with pytest.raises(BadInput, match="PATCHER_MODEL_IDLE_TIMEOUT_S: Input should be greater than 0"):
        ModelConfig.from_env(env | {"PATCHER_MODEL_IDLE_TIMEOUT_S": "0"})
    assert config.api_key is not None and config.api_key.get_secret_value() == "unused"
    assert ModelConfig.from_env({"OPENAI_API_KEY": "sk-real-1234"}, model="gpt-4.1").model == "gpt-4.1"


@pytest.mark.parametrize("key", ["sk-...", "changeme", "your-key", "YOUR_API_KEY", "<key>", "sk-xxxx"])
def test_placeholder_key_refused(key: str) -> None:
    with pytest.raises(BadInput, match="placeholder") as info:
        ModelConfig.from_env({"OPENAI_API_KEY": key, "OPENAI_BASE_URL": "http://localhost:1/v1"})
    assert key not in str(info.value)


def test_openai_without_key_and_bad_fields_refused() -> None:
    with pytest.raises(BadInput, match="OPENAI_API_KEY is not set"):
        ModelConfig.from_env({})
    with pytest.raises(BadInput, match="http://"):
        ModelConfig.from_env({"OPENAI_BASE_URL": "localhost:8000"})
    with pytest.raises(BadInput, match="max_tokens"):
        ModelConfig.from_env({"OPENAI_API_KEY": "sk-real"}, max_tokens=0)


@pytest.mark.parametrize("body", ["Internal error", {"error": {"message": "boom"}}, {"choices": "nope"},
                                  {"choices": []}, {"choices": [{"index": 0, "message": None}]},
                                  {"choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]},
                                  {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": "x"}}]}],
                         ids=["text", "error_body", "choices_str", "no_choices", "null_message", "str_message",
                              "str_tool_calls"])
def test_an_answer_without_a_usable_message_is_a_model_error(server: ScriptedModelServer, model: OpenAIModel,
                                                             body: dict[str, Any] | str) -> None:
    server.add(http_error(200, body))
    with pytest.raises(ModelError, match="did not answer like a chat-completions API"):
        model.complete(USER, TOOLS)


def test_odd_but_usable_shapes_are_read(server: ScriptedModelServer, model: OpenAIModel) -> None:
    message = {"role": "assistant", "content": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "look."}],
               "tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": {"path": "x"}}},
                              {"type": "function", "function": {"name": "git_diff"}}]}
    usage = {"prompt_tokens": "12", "completion_tokens": None}
    server.add(http_error(200, {"model": 7, "choices": [{"index": 0, "message": message, "finish_reason": 5}],
                                "usage": usage}))
    r = model.complete(USER, TOOLS)
    assert (r.content, r.stop_raw, r.stop, r.model) == ("Let me look.", "5", "unknown", "scripted-model")
    assert [(c.id, c.name, c.arguments_raw) for c in r.tool_calls] == [
        ("a", "read_file", '{"path": "x"}'), ("call_missing_1", "git_diff", "")]
    assert r.tokens_estimated and r.tokens_in >= estimate_tokens(USER) and isinstance(r.tokens_out, int)


def test_out_of_credit_is_not_retried(server: ScriptedModelServer, model: OpenAIModel) -> None:
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                      "code": "insufficient_quota"}}
    server.add(http_error(429, body), reply("never"))
    with pytest.raises(ModelError, match="HTTP 429 after 1 attempt"):
        model.complete(USER, TOOLS)
    assert server.remaining == 1
