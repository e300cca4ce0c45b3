"""The agent loop over real HTTP (real openai client, ScriptedModelServer) and real tools (LocalSandbox).

No mocks: each test scripts a model, runs `Agent.run()` on a staged git repo, then reads what the model
server received, the trace written, and what the loop decided.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from patcher.agent import Limits
from patcher.agent.guards import normalized
from patcher.model import estimate_tokens
from patcher.sandbox import diff_of
from patcher.testing import Step, content_filter, cut_off, delay, http_error, malformed_args, reply
from sandbox.protocol import MODEL_TOOLS
from tests.support.agent import KEY, SOURCE, TASK, Run, calls_in, done, reads

# dispatch


def test_three_tool_calls_all_run_in_order_with_matching_ids(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply("Looking.", [("read_file", {"path": "shop.py"}), ("search_code", {"pattern": "price"}),
                                      ("git_diff", {})]),
                   *done("Nothing to fix.")])
    assert (r.result.reason, r.result.rounds, r.result.tool_calls) == ("finished", 3, 3)
    messages = r.requests[1]["messages"]
    assert [c["id"] for c in messages[-4]["tool_calls"]] == ["call_1", "call_2", "call_3"]
    results = messages[-3:]
    assert [m["tool_call_id"] for m in results] == ["call_1", "call_2", "call_3"]
    assert "1\tdef total(items):" in results[0]["content"]
    assert "shop.py:2:" in results[1]["content"]
    assert results[2]["content"] == "no changes"
    assert r.result.final_text == "Nothing to fix."


def test_unknown_tool_gets_a_note_listing_the_real_tools(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [("open_file", {"path": "shop.py"})]), reply("ok")])
    [note] = r.tool_messages(1)
    assert note["content"].startswith("[error] There is no tool named 'open_file'")
    assert all(name in note["content"] for name in MODEL_TOOLS)


@pytest.mark.parametrize("raw", ['```json\n{"path": "shop.py"}\n```', "{'path': 'shop.py'}",
                                 '{"path": "shop.py",}', "```\n{'path': 'shop.py', 'start_line': 1,}\n```"],
                         ids=["code_fence", "single_quotes", "trailing_comma", "all_three"])
def test_malformed_arguments_are_repaired_and_run(run_agent: Callable[..., Run], raw: str) -> None:
    r = run_agent([malformed_args("read_file", raw), reply("ok")])
    [result] = r.tool_messages(1)
    assert "1\tdef total(items):" in result["content"]
    [event] = r.of_type("tool_call")
    assert (event["is_error"], event["repaired"], event["args"]["path"]) == (False, True, "shop.py")


def test_unrepairable_arguments_get_a_note_quoting_the_parse_error(run_agent: Callable[..., Run]) -> None:
    r = run_agent([malformed_args("read_file", '{"path": "shop.py", "start_line"'), reply("ok")])
    [note] = r.tool_messages(1)
    assert note["content"].startswith("[error] Could not read the arguments of read_file")
    assert "Expecting ':' delimiter" in note["content"] and '"start_line"' in note["content"]


def test_wrong_argument_names_are_named(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [("read_file", {"file": "shop.py", "line": 2})]), reply("ok")])
    [note] = r.tool_messages(1)
    assert note["content"].startswith("[error] read_file: unknown argument(s) file, line")
    assert "missing required argument(s) path" in note["content"] and "it takes path" in note["content"]


@pytest.mark.parametrize("content", [
    '```json\n{"name": "read_file", "arguments": {"path": "shop.py"}}\n```',
    'Let me look. <tool_call>{"name": "read_file", "arguments": {"path": "shop.py"}}</tool_call>'],
    ids=["fenced", "tagged_after_prose"])
def test_tool_calls_written_in_content_are_run(run_agent: Callable[..., Run], content: str) -> None:
    r = run_agent([reply(content), *done("ok")])
    assert (r.result.reason, r.result.tool_calls) == ("finished", 1)
    assert calls_in(r.requests[1]) == [("read_file", {"path": "shop.py"})]
    [result] = r.tool_messages(1)
    assert result["tool_call_id"] == "content_r1_1" and "1\tdef total(items):" in result["content"]
    [model_call, _, _] = r.of_type("model_call")
    assert model_call["calls_in_content"] and model_call["tool_calls"][0]["name"] == "read_file"


@pytest.mark.parametrize(("first", "retry", "note"), [
    (("search_code", {"pattern": "discount"}), ("search_code", {"pattern": "price"}), "no matches for 'discount'"),
    (("read_file", {"path": "src/shop.py"}), ("read_file", {"path": "shop.py"}), "[error] no such file"),
    (("run_test", {"command": "python -c pass"}), ("run_test", {"command": "python -c \"print('ok')\""}),
     "(no output)"),
], ids=["search_no_match", "read_missing", "test_no_output"])
def test_a_silent_failure_is_a_note_and_the_next_call_differs(
        run_agent: Callable[..., Run], first: tuple[str, dict[str, Any]], retry: tuple[str, dict[str, Any]],
        note: str) -> None:
    def react(body: dict[str, Any]) -> Step:
        last = body["messages"][-1]["content"]
        return reply(None, [retry if note in last else first])

    r = run_agent([reply(None, [first]), react, reply("ok")])
    [seen, _] = r.tool_messages(2)
    assert seen["content"].strip() and note in seen["content"]
    assert calls_in(r.requests[1]) == [first] and calls_in(r.requests[2]) == [retry]


# guards


def test_alternating_reset_and_status_ends_at_the_repeat_check(run_agent: Callable[..., Run]) -> None:
    reset = reply(None, [("write_file", {"path": "shop.py", "content": SOURCE})])
    status = reply(None, [("git_diff", {})])
    r = run_agent([reset, status] * 26, Limits(max_rounds=100))
    assert r.result.reason == "repeated_call" and r.result.rounds == 5
    assert r.server.remaining == 52 - 5
    [stop] = r.of_type("guard_stop")
    assert stop["reason"] == "repeated_call" and "write_file was called 3 times" in stop["message"]


def test_same_call_with_argument_keys_reordered_is_still_a_repeat(run_agent: Callable[..., Run]) -> None:
    a = reply(None, [("read_file", '{"path": "shop.py", "start_line": 1}')])
    b = reply(None, [("read_file", '{"start_line": 1, "path": "shop.py"}')])
    r = run_agent([a, b, a, b], Limits(max_rounds=10))
    assert (r.result.reason, r.result.rounds) == ("repeated_call", 3)


def test_polling_a_changing_result_is_not_a_repeat(run_agent: Callable[..., Run]) -> None:
    poll = reply(None, [("run_test", {"command": 'python -c "import time; print(time.time_ns())"'})])
    r = run_agent([poll] * 4 + done(), Limits(max_rounds=10, repeat_limit=3))
    assert (r.result.reason, r.result.tool_calls) == ("finished", 4)
    assert len({e["result"] for e in r.of_type("tool_call")}) == 4


TIMED = ("python -c \"import time, tempfile; t = time.perf_counter(); d = tempfile.mkdtemp(); "
         "print(f'1 failed in {time.perf_counter() - t + 0.01:.4f}s at 0x{id(t):x} in {d}')\"")


def test_a_result_that_differs_only_in_timing_is_still_a_repeat(run_agent: Callable[..., Run]) -> None:
    timed = reply(None, [("run_test", {"command": TIMED})])
    r = run_agent([timed] * 4 + [reply("done")], Limits(max_rounds=10, repeat_limit=3))
    assert (r.result.reason, r.result.rounds) == ("repeated_call", 3)
    results = [e["result"] for e in r.of_type("tool_call")]
    assert len(set(results)) == 3, "the raw outputs differ (timing, address, temp path); the guard saw one"


def test_the_last_allowed_repeat_says_so_before_the_guard_stops_the_next(run_agent: Callable[..., Run]) -> None:
    same = reply(None, [("run_test", {"command": TIMED})])
    r = run_agent([same, same, *done()], Limits(max_rounds=10, repeat_limit=3))
    assert r.result.reason == "finished"
    first, second = r.tool_messages(2)
    assert "same as last time" not in first["content"]
    assert "note: this call and its result are the same as last time (2 of 3)" in second["content"]
    assert "ends the run" in second["content"]


def test_normalized_keeps_what_is_not_volatile() -> None:
    assert normalized("3 passed in 0.03s; took 12 ms") == "3 passed in <duration>; took <duration>"
    assert normalized("<obj at 0x7f3a2b1c9d80> /tmp/pytest-of-root/pytest-4/x.py:3") == \
        "<obj at 0x<address>> /tmp/<path>:3"
    assert normalized("1764582934123456789 items, line 42") == "1764582934123456789 items, line 42"


def prompt_tokens(request: dict[str, Any]) -> int:
    """Estimated size of a request as the server received it: messages and tool schemas."""
    return estimate_tokens(request["messages"]) + math.ceil(len(json.dumps(request["tools"])) / 4)


def test_round_limit(run_agent: Callable[..., Run]) -> None:
    r = run_agent(reads(10), Limits(max_rounds=3))
    assert (r.result.reason, r.result.rounds, len(r.requests)) == ("round_limit", 3, 3)
    assert [e["reason"] for e in r.of_type("guard_stop")] == ["round_limit"]


def test_cost_limit_priced_by_the_model_the_server_names(run_agent: Callable[..., Run]) -> None:
    steps: list[Step] = [reply(None, [("git_diff", {"ref": "HEAD"})], usage=(100_000, 1_000), model="gpt-4o")
                         for _ in range(5)]
    r = run_agent(steps, Limits(max_rounds=10, max_cost_usd=0.5, repeat_limit=10))
    assert (r.result.reason, r.result.rounds) == ("budget_exceeded", 2)
    assert r.result.cost_usd == pytest.approx(2 * (0.25 + 0.01))
    assert [e["cost"] for e in r.of_type("model_call")] == [pytest.approx(0.26)] * 2


def test_unknown_price_counts_tokens_and_reports_cost_unknown(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply("done", usage=(10, 2))] * 2, Limits(max_cost_usd=0.01))
    assert (r.result.reason, r.result.tokens_in, r.result.tokens_out, r.result.cost_usd) == ("finished", 20, 4, None)


def test_wall_clock_limit(run_agent: Callable[..., Run]) -> None:
    slow = [delay(0.15, step) for step in reads(10)]
    r = run_agent(slow, Limits(timeout_s=0.4, max_rounds=10))
    assert r.result.reason == "timeout" and 1 <= r.result.rounds <= 4  # well before the 10 it was given
    assert r.of_type("guard_stop")[0]["reason"] == "timeout"


# model faults and stop reasons


def test_three_500s_then_success_is_retried(run_agent: Callable[..., Run]) -> None:
    r = run_agent([http_error(500)] * 3 + done())
    assert r.result.reason == "finished" and len(r.requests) == 5
    [event, _] = r.of_type("model_call")
    assert event["attempts"] == 4


def test_a_400_is_not_retried(run_agent: Callable[..., Run]) -> None:
    r = run_agent([http_error(400), reply("never sent")])
    assert r.result.reason == "model_error" and "HTTP 400 after 1 attempt" in r.result.message
    assert len(r.requests) == 1 and r.server.remaining == 1


def test_cut_off_reply_runs_nothing_and_ends_cut_off(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [("read_file", {"path": "shop.py"})]),
                   cut_off("write_file", '{"path": "shop.py", "content": "def total(items):\\n    ret')])
    assert (r.result.reason, r.result.rounds, r.result.tool_calls) == ("cut_off", 2, 1)
    assert r.result.stops == ["wants_tool", "cut_off"]
    assert [e["round"] for e in r.of_type("tool_call")] == [1]
    assert r.of_type("model_call")[1]["stop"] == "cut_off"
    assert diff_of(r.box) == ""
    assert r.agent.messages[-1]["role"] == "tool"


@pytest.mark.parametrize(("step", "stop", "text"), [
    (content_filter(), "blocked", "content filter"),
    (reply(None, [("write_file", {"path": "x.py", "content": "x"})], "content_filter"), "blocked", "content filter"),
    (reply("hmm", finish_reason="end_turn_weird"), "unknown", "end_turn_weird"),
], ids=["blocked", "blocked_with_call", "unknown"])
def test_blocked_or_unknown_stop_runs_nothing_and_is_a_model_error(
        run_agent: Callable[..., Run], step: Step, stop: str, text: str) -> None:
    r = run_agent([step])
    assert (r.result.reason, r.result.stops, r.result.tool_calls) == ("model_error", [stop], 0)
    assert text in r.result.message and not r.of_type("tool_call")
    assert [m["role"] for m in r.agent.messages] == ["system", "user"]


# context budget


def test_prompt_stays_under_budget_over_40_rounds_with_the_goal_first(run_agent: Callable[..., Run]) -> None:
    budget = 6_000
    r = run_agent([*reads(40), *done()], Limits(max_rounds=50, context_tokens=budget))
    assert (r.result.reason, r.result.rounds) == ("finished", 42)
    first = r.requests[0]["messages"][:2]
    assert first[1]["content"] == TASK and first[0]["role"] == "system"
    sizes = [prompt_tokens(req) for req in r.requests]
    assert all(req["messages"][:2] == first for req in r.requests)
    assert min(sizes[1:]) > budget // 2 and max(sizes) <= budget  # a file read costs about half the budget
    last = r.requests[40]["messages"]  # after the 40th read (the one after it carries the finish's note)
    markers = ("[elided to stay within the context budget", "[earlier rounds were dropped")
    assert any(str(m["content"]).startswith(markers) for m in last), [str(m["content"])[:60] for m in last]
    assert last[-1]["role"] == "tool" and "[elided" not in last[-1]["content"]


# events


def test_trace_events_carry_the_schema_and_never_the_key(run_agent: Callable[..., Run]) -> None:
    leak = f"API_KEY = '{KEY}'\n"
    r = run_agent([reply("Writing.", [("write_file", {"path": "conf.py", "content": leak})]),
                   reply(f"I used {KEY}", [("read_file", {"path": "conf.py"}), ("git_diff", {})])],
                  Limits(max_rounds=2))
    assert r.result.reason == "round_limit"
    assert KEY not in r.trace_path.read_text() and KEY in json.dumps(r.requests)
    events = r.events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["run_id"] == "run-agent-test" and isinstance(e["ts"], float) for e in events)
    assert [e["type"] for e in events] == ["model_call", "tool_call", "model_call", "tool_call", "tool_call",
                                           "guard_stop"]
    for e in r.of_type("model_call"):
        assert {"round", "model", "stop_raw", "stop", "tokens", "cost", "duration_ms", "tool_calls"} <= set(e)
        assert set(e["tokens"]) == {"input", "output"} and e["stop"] == "wants_tool"
        assert all(set(c) == {"id", "name", "args"} for c in e["tool_calls"])
    second = r.of_type("model_call")[1]
    assert [c["id"] for c in second["tool_calls"]] == ["call_2", "call_3"] and "[REDACTED]" in second["content"]
    for e in r.of_type("tool_call"):
        assert {"round", "call_id", "tool", "args", "is_error", "result", "duration_ms"} <= set(e)
    read = r.of_type("tool_call")[1]
    assert (read["round"], read["call_id"], read["tool"], read["args"]) == (2, "call_2", "read_file",
                                                                           {"path": "conf.py"})
    assert "[REDACTED]" in read["result"] and read["is_error"] is False
    assert r.of_type("guard_stop")[0]["reason"] == "round_limit"
