"""Streamed replies over real HTTP: a slow model is not a dead one, a silent one is, and no request is sent twice
while the server is answering it. The real openai client against ScriptedModelServer's server-sent events."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

from patcher.errors import ModelError
from patcher.model import OpenAIModel, StreamProgress
from patcher.model.stream import Assembly
from patcher.testing import ScriptedModelServer, http_error, reply

USER = [{"role": "system", "content": "fix it"}, {"role": "user", "content": "Traceback: KeyError"}]
TOOLS = [{"type": "function", "function": {"name": "edit_file", "description": "edit",
                                           "parameters": {"type": "object", "properties": {}}}}]
EDIT = ("edit_file", {"path": "shop/pagination.py", "old_text": "range(start, end)",
                      "new_text": "range(start, min(end, len(items)))"})


def test_a_reply_slower_than_a_whole_request_deadline_arrives_while_chunks_flow() -> None:
    slow = reply("Fixing the bound now.", [EDIT], token_delay_s=0.1, usage=(900, 40))
    with ScriptedModelServer([slow]) as server:
        seen: list[StreamProgress] = []
        with OpenAIModel(server.model_config(idle_timeout_s=1.0, reply_timeout_s=30), on_progress=seen.append) as m:
            started = time.monotonic()
            r = m.complete(USER, TOOLS)
            took = time.monotonic() - started
        assert took > 2.0  # twice the idle deadline: only the time between chunks is judged
        assert (r.content, r.stop, r.tokens_in, r.tokens_out, r.tokens_estimated) == (
            "Fixing the bound now.", "wants_tool", 900, 40, False)
        assert [(c.id, c.name) for c in r.tool_calls] == [("call_1", "edit_file")]
        assert '"new_text": "range(start, min(end, len(items)))"' in r.tool_calls[0].arguments_raw
        assert len(server.chat_requests) == 1
        assert server.chat_requests[0]["stream"] is True
        assert server.chat_requests[0]["stream_options"] == {"include_usage": True}
        assert seen and seen[-1].tool_calls == ["edit_file"] and seen[-1].chars > 20 and seen[-1].tail


def test_a_server_that_goes_silent_mid_reply_fails_naming_the_idle_deadline() -> None:
    with ScriptedModelServer([reply("A long answer that stops half way", silent_after=3), reply("not asked")]) as srv:
        with OpenAIModel(srv.model_config(idle_timeout_s=0.5, max_retries=3)) as m:
            started = time.monotonic()
            with pytest.raises(ModelError) as info:
                m.complete(USER, TOOLS)
            assert time.monotonic() - started < 5
        message = str(info.value)
        assert "went silent for 0.5s in the middle of a reply" in message
        assert "idle deadline, PATCHER_MODEL_IDLE_TIMEOUT_S" in message and "3 chunk(s)" in message
        time.sleep(0.3)
        assert len(srv.chat_requests) == 1 and srv.remaining == 1  # never asked again while it was answering


def test_a_reply_past_the_ceiling_fails_naming_the_reply_deadline() -> None:
    with ScriptedModelServer([reply("x" * 200, token_delay_s=0.05)]) as server:
        with OpenAIModel(server.model_config(idle_timeout_s=2, reply_timeout_s=0.5)) as m, \
                pytest.raises(ModelError, match=r"still answering after 0.5s \(the reply deadline, "
                                                r"PATCHER_MODEL_REPLY_TIMEOUT_S; \d+ chunk"):
            m.complete(USER, TOOLS)
        assert len(server.chat_requests) == 1


def test_errors_answered_before_any_reply_are_still_retried() -> None:
    steps = [http_error(503), http_error(429, retry_after=0), reply("ok")]
    with ScriptedModelServer(steps) as server, OpenAIModel(server.model_config()) as m:
        r = m.complete(USER, TOOLS)
    assert (r.content, r.attempts, len(server.chat_requests)) == ("ok", 3, 3)


def test_a_server_that_refuses_stream_options_is_asked_without_them() -> None:
    def picky(request: dict[str, Any]) -> Any:
        if "stream_options" in request:
            return http_error(400, {"error": {"message": "Unrecognized request argument: stream_options"}})
        return reply("fine")

    with ScriptedModelServer([picky] * 3) as server, OpenAIModel(server.model_config()) as m:
        first, second = m.complete(USER, TOOLS), m.complete(USER, TOOLS)
        assert (first.content, first.tokens_estimated, second.content) == ("fine", True, "fine")
        assert ["stream_options" in body for body in server.chat_requests] == [True, False, False]


def test_streaming_off_asks_for_the_whole_reply() -> None:
    with ScriptedModelServer([reply("whole", usage=(5, 1))]) as server:
        with OpenAIModel(server.model_config(stream=False)) as m:
            assert m.complete(USER, TOOLS).content == "whole"
        assert "stream" not in server.chat_requests[0]


def test_a_server_that_ignores_stream_and_answers_whole_is_read() -> None:
    whole = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    with ScriptedModelServer([http_error(200, whole)]) as server, OpenAIModel(server.model_config()) as m:
        assert m.complete(USER, TOOLS).content == "hi"


def chunk(delta: dict[str, Any], finish: str | None = None) -> ChatCompletionChunk:
    return ChatCompletionChunk.construct(**{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_tool_call_pieces_without_an_index_are_joined_by_id() -> None:
    """llama.cpp and Ollama builds differ: some send a whole call per piece, some no index."""
    whole = Assembly(time.monotonic())
    for piece in [chunk({"tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": '{"pa'}}]}),
                  chunk({"tool_calls": [{"id": "a", "function": {"arguments": 'th": "x.py"}'}}]}),
                  chunk({"tool_calls": [{"id": "b", "function": {"name": "git_diff", "arguments": "{}"}}]}),
                  chunk({"content": None}, "tool_calls")]:
        whole.add(piece)
    message = whole.completion().choices[0].message
    assert message.tool_calls is not None and message.content is None
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("a", "read_file", '{"path": "x.py"}'), ("b", "git_diff", "{}")]
    assert whole.completion().choices[0].finish_reason == "tool_calls"
