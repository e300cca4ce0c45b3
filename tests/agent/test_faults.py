"""More of the loop over real HTTP and the real tool server: stops, request settings, silent tools, guards.

Uses the harness of tests/agent/test_loop.py (a ScriptedModelServer, the real openai client, a LocalSandbox).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest

from patcher.agent import Agent, Limits, prompts
from patcher.agent.guards import call_key
from patcher.errors import ModelUnreachable
from patcher.intake import StagedRepo
from patcher.model import ModelConfig, OpenAIModel
from patcher.sandbox import LocalSandbox, diff_of
from patcher.testing import NULL_FINISH, Step, delay, http_error, reply
from patcher.trace import Trace, read_events
from sandbox.protocol import Request, ToolResult
from tests.support.agent import TASK, Run, calls_in, done, reads


@pytest.mark.parametrize("finish", ["stop", NULL_FINISH], ids=["stop", "null"])
def test_a_finished_reply_that_carries_tool_calls_runs_them(run_agent: Callable[..., Run], finish: str) -> None:
    r = run_agent([reply(None, [("read_file", {"path": "shop.py"}), ("git_diff", {})], finish), *done()])
    assert (r.result.reason, r.result.tool_calls) == ("finished", 2)
    assert r.result.stops == ["wants_tool", "finished", "finished"]
    assert [m["tool_call_id"] for m in r.tool_messages(1)] == ["call_1", "call_2"]
    assert r.of_type("model_call")[0]["stop_raw"] == (None if finish == NULL_FINISH else "stop")


def test_a_cut_off_reply_with_a_call_written_in_its_text_runs_nothing(run_agent: Callable[..., Run]) -> None:
    text = '{"name": "write_file", "arguments": {"path": "shop.py", "content": "x = 1\\n"}}'
    r = run_agent([reply(text, finish_reason="length"), reply("never asked")])
    assert (r.result.reason, r.result.stops, r.result.tool_calls) == ("cut_off", ["cut_off"], 0)
    assert diff_of(r.box) == "" and not r.of_type("tool_call") and r.server.remaining == 1


def test_native_tool_calls_win_over_json_in_the_text(run_agent: Callable[..., Run]) -> None:
    text = 'I will call {"name": "write_file", "arguments": {"path": "shop.py", "content": ""}} later.'
    r = run_agent([reply(text, [("read_file", {"path": "shop.py"})]), reply("done")])
    assert [e["call_id"] for e in r.of_type("tool_call")] == ["call_1"] and diff_of(r.box) == ""
    assert not r.of_type("model_call")[0]["calls_in_content"]


def test_every_request_carries_max_tokens_and_a_deadline(run_agent: Callable[..., Run]) -> None:
    late = delay(1.0, reply("too late"))
    r = run_agent([*reads(2), late, late], max_tokens=777, idle_timeout_s=0.3, max_retries=1)
    assert (r.result.reason, r.result.rounds) == ("model_error", 2)
    assert "sent nothing for 0.3s (the idle deadline, PATCHER_MODEL_IDLE_TIMEOUT_S)" in r.result.message
    assert [req["max_tokens"] for req in r.requests] == [777] * 3  # the late one is not asked again


def test_max_completion_tokens_is_sent_when_configured(run_agent: Callable[..., Run]) -> None:
    r = run_agent([*reads(1), *done()], max_tokens=555, max_tokens_param="max_completion_tokens")
    assert [(req.get("max_tokens"), req["max_completion_tokens"]) for req in r.requests] == [(None, 555)] * 3


def test_rate_limits_are_retried_inside_a_run(run_agent: Callable[..., Run]) -> None:
    r = run_agent([http_error(429, retry_after=0), http_error(503), *done()])
    assert r.result.reason == "finished" and len(r.requests) == 4
    assert r.of_type("model_call")[0]["attempts"] == 3


def test_an_unreachable_model_propagates_and_the_job_exits_3(staged: StagedRepo, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = ModelConfig(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, retry_initial_s=0.01)
    trace = Trace(tmp_path / "trace.jsonl", "unreachable")
    with LocalSandbox(staged) as box, OpenAIModel(config) as model, pytest.raises(ModelUnreachable) as info:
        Agent(model, box, trace).run(TASK)
    trace.close()
    assert info.value.exit_code == 3 and "2 attempt(s)" in str(info.value)
    assert read_events(trace.path) == []


def test_configured_prices_are_used(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply("done", usage=(1_000_000, 500_000))], prices={"scripted-model": (1.0, 2.0)})
    assert r.result.cost_usd == pytest.approx(2.0) and r.of_type("model_call")[0]["cost"] == pytest.approx(2.0)


class OldStyleBox:
    """The real tool server, except that a search without matches answers "" as the old tools did."""

    def __init__(self, box: LocalSandbox) -> None:
        self.box, self.base_commit = box, box.base_commit
        self.allowlist, self.report_dir = box.allowlist, box.report_dir

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult:
        result = self.box.call(request, deadline_s)
        return ToolResult(is_error=False, output="") if result.output.startswith("no matches") else result

    def close(self) -> None:
        self.box.close()


def test_an_old_style_silent_tool_becomes_an_error_note_and_the_next_call_differs(
        run_agent: Callable[..., Run]) -> None:
    first, retry = ("search_code", {"pattern": "discount"}), ("search_code", {"pattern": "price"})

    def react(body: dict[str, Any]) -> Step:
        return reply(None, [retry if body["messages"][-1]["content"].startswith("[error]") else first])

    r = run_agent([reply(None, [first]), react, reply("ok")], wrap=OldStyleBox)
    [note] = r.tool_messages(1)
    assert note["content"].startswith("[error] search_code returned no output; this is not a success signal")
    assert calls_in(r.requests[1]) == [first] and calls_in(r.requests[2]) == [retry]
    assert [e["is_error"] for e in r.of_type("tool_call")] == [True, False]


def test_a_repeated_unreadable_call_is_still_a_repeat(run_agent: Callable[..., Run]) -> None:
    bad = reply(None, [("read_file", '{"path": ')])
    r = run_agent([bad] * 5, Limits(max_rounds=10))
    assert (r.result.reason, r.result.rounds) == ("repeated_call", 3)


def test_call_key_sorts_keys_at_every_level() -> None:
    a = {"b": {"y": 1, "x": [{"q": 1, "p": 2}]}, "a": 1}
    b = {"a": 1, "b": {"x": [{"p": 2, "q": 1}], "y": 1}}
    assert call_key("t", a) == call_key("t", b) != call_key("u", b)
    assert call_key("t", a) != call_key("t", {"a": 1, "b": {"x": [{"p": 2, "q": 2}], "y": 1}})


def test_prompt_templates_refuse_a_missing_variable() -> None:
    with pytest.raises(jinja2.UndefinedError):
        prompts.render("task", traceback="Traceback …")
    assert prompts.render("observation", is_error=True, text="no such file", note=None) == "[error] no such file"
    with pytest.raises(jinja2.UndefinedError):
        prompts.render("observation", is_error=True, text="no such file")


def test_a_malformed_answer_mid_run_is_a_model_error(run_agent: Callable[..., Run]) -> None:
    r = run_agent([*reads(1), http_error(200, {"choices": [{"index": 0, "message": None}]})])
    assert (r.result.reason, r.result.rounds, r.result.tool_calls) == ("model_error", 1, 1)
    assert "did not answer like a chat-completions API" in r.result.message


def test_events_are_written_as_they_happen(run_agent: Callable[..., Run], tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def look(body: dict[str, Any]) -> Step:
        seen.append([e["type"] for e in read_events(tmp_path / "trace.jsonl")])
        return reply("done")

    r = run_agent([*reads(1), look, reply("done")])
    assert r.result.reason == "finished"
    assert seen == [["model_call", "tool_call"]]  # on disk while the model was still being asked
