"""The context budget on plain message lists: what goes first, what never goes, and that growth is bounded."""

from __future__ import annotations

import copy
import json
from typing import Any

from patcher.agent.context import CUT, DROPPED, MIN_KEPT, fit
from patcher.model import estimate_tokens

PINNED = [{"role": "system", "content": "You are patcher. " * 20}, {"role": "user", "content": "Traceback " * 50}]


def round_of(n: int, output: str, arguments: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    call = {"id": f"call_{n}", "type": "function",
            "function": {"name": "write_file", "arguments": json.dumps(arguments or {"path": f"f{n}.py"})}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": output}]


def history(rounds: int, size: int = 2_000) -> list[dict[str, Any]]:
    messages = copy.deepcopy(PINNED)
    for n in range(rounds):
        messages += round_of(n, f"output {n} " + "x" * size)
    return messages


def test_under_budget_nothing_changes() -> None:
    messages = history(3)
    before = copy.deepcopy(messages)
    assert fit(messages, 100_000, estimate_tokens) == 0 and messages == before


def test_old_tool_results_go_first_and_recent_rounds_stay() -> None:
    messages = history(6)
    budget = estimate_tokens(messages) - 1_000
    assert fit(messages, budget, estimate_tokens) > 0
    assert estimate_tokens(messages) <= budget and messages[:2] == PINNED
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert tools[0].startswith("[elided to stay within the context budget: 2009 characters of tool output")
    assert all(t.startswith("output") for t in tools[-2:])
    assert len(messages) == 2 + 12  # nothing dropped while eliding was enough


def test_large_arguments_of_old_calls_go_after_old_results() -> None:
    messages = copy.deepcopy(PINNED)
    for n in range(4):
        messages += round_of(n, "short", {"path": f"f{n}.py", "content": "y" * 8_000})
    fit(messages, estimate_tokens(messages) - 1_000, estimate_tokens)
    args = json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])
    assert args["path"] == "f0.py" and args["content"].startswith("[elided") and "8000 characters of content" in (
        args["content"])
    assert "y" * 8_000 in json.dumps(messages[-2]["tool_calls"])


def test_oldest_rounds_are_dropped_last_with_one_marker() -> None:
    messages = history(40, size=100)
    budget = estimate_tokens(PINNED) + 400
    for extra in range(40, 45):  # repeated fits keep one marker, right after the goal
        fit(messages, budget, estimate_tokens)
        assert estimate_tokens(messages) <= budget
        assert [m.get("content") for m in messages].count(DROPPED) == 1 and messages[2]["content"] == DROPPED
        messages += round_of(extra, "z" * 100)
    assert messages[:2] == PINNED
    assert messages[3]["role"] == "assistant"  # a round starts whole after the marker


def test_newest_output_larger_than_the_budget_is_cut_not_dropped() -> None:
    messages = history(2) + round_of(9, "head " + "w" * 60_000)
    budget = 3_000
    fit(messages, budget, estimate_tokens)
    assert estimate_tokens(messages) <= budget and messages[:2] == PINNED
    newest = messages[-1]["content"]
    assert newest.startswith("head www") and len(newest) > MIN_KEPT
    assert newest.endswith(CUT.format(n=60_005 - newest.index("\n[…")))


def test_growth_is_bounded_however_long_the_run() -> None:
    messages = copy.deepcopy(PINNED)
    budget = 5_000
    for n in range(500):
        messages += round_of(n, f"result {n} " + "r" * (n * 37 % 9_000), {"path": "a.py", "content": "c" * (n % 3_000)})
        fit(messages, budget, estimate_tokens)
        assert estimate_tokens(messages) <= budget and messages[:2] == PINNED
        assert messages[-1]["content"].startswith(f"result {n} ")
