"""One run's trace events counted: rounds and stops, the first empty or failed tool result, the first third
identical call, slowest tools, tokens and cost by round, how the run ended (trace/view.py reads, trace/render.py shows).

Works on traces of runs still going or killed mid-way: a missing run_end is reported, not an error.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patcher.errors import BadInput
from patcher.trace.log import call_key, read_events

EMPTY = re.compile(r"^no matches for |returned no output|\(no output\)\s*$| is empty$")
"""Tool results that carry nothing: a search with no match, a command with no output, an empty file."""


@dataclass
class ToolStats:
    tool: str
    calls: int = 0
    errors: int = 0
    empty: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0


@dataclass
class RunAnalysis:
    file: str
    run_id: str | None
    events: int
    rounds: int = 0
    stops: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    first_bad_result: dict[str, Any] | None = None
    """The first tool result that was empty or failed: round, tool, args, kind (empty|failed), text."""
    first_third_call: dict[str, Any] | None = None
    """The first call made a third time (tool + arguments, keys sorted): round, earlier rounds, times in all."""
    tools: list[ToolStats] = field(default_factory=list)
    """Per tool, slowest (most total time) first."""
    slowest_calls: list[dict[str, Any]] = field(default_factory=list)
    by_round: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    cost_usd: float | None = 0.0
    """None when any model call's cost was unknown."""
    max_cost_usd: float | None = None
    over_budget: bool = False
    duration_s: float = 0.0
    verify: list[dict[str, Any]] = field(default_factory=list)
    nudges: list[dict[str, Any]] = field(default_factory=list)
    """The loop's notes before the first edit (round, kind: give_up or prose_code)."""
    environment: dict[str, Any] = field(default_factory=dict)
    """The boxes' Python and the dependency setup (the `environment` event: python, setup)."""
    ended: dict[str, Any] = field(default_factory=dict)
    """status, reason, message (from run_end), guard (guard_stop reason), complete (run_end seen), last event."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def result_kind(event: dict[str, Any]) -> str | None:
    """'empty' or 'failed' for a tool_call event worth a look, else None."""
    text = str(event.get("result") or "").removeprefix("[error] ").strip()
    if not text or EMPTY.search(text):
        return "empty"
    return "failed" if event.get("is_error") else None


def analyze(events: list[dict[str, Any]], file: str = "") -> RunAnalysis:
    a = RunAnalysis(file=file, run_id=next((e.get("run_id") for e in events), None), events=len(events))
    tools: dict[str, ToolStats] = {}
    seen: dict[str, list[int | None]] = {}
    calls: list[dict[str, Any]] = []
    stops: Counter[str] = Counter()
    for e in events:
        kind = e.get("type")
        if kind == "run_start":
            a.max_cost_usd = (e.get("limits") or {}).get("max_cost_usd")
        elif kind == "model_call":
            _model_call(a, e, stops)
        elif kind == "tool_call":
            calls.append(e)
            _tool_call(a, e, tools, seen)
        elif kind == "environment":
            a.environment = {"python": e.get("python"), "setup": e.get("setup")}
        elif kind == "verify":
            a.verify.append({k: e.get(k) for k in ("phase", "command", "outcome", "reason", "duration_ms")})
        elif kind == "nudge":
            a.nudges.append({"round": e.get("round"), "kind": e.get("kind")})
        elif kind == "guard_stop":
            a.ended["guard"] = e.get("reason")
            a.ended["guard_message"] = e.get("message")
        elif kind == "run_end":
            a.ended.update(status=e.get("status"), reason=e.get("reason"), message=e.get("message"))
    a.stops = dict(stops.most_common())
    a.tools = sorted(tools.values(), key=lambda t: -t.total_ms)
    slow = sorted(calls, key=lambda e: -(e.get("duration_ms") or 0))[:3]
    a.slowest_calls = [{"round": e.get("round"), "tool": e.get("tool"), "args": e.get("args"),
                        "duration_ms": e.get("duration_ms")} for e in slow]
    if a.first_third_call is not None:
        a.first_third_call["times"] = len(seen[a.first_third_call["key"]])
    a.over_budget = bool(a.max_cost_usd is not None and a.cost_usd is not None and a.cost_usd >= a.max_cost_usd)
    times = [e["ts"] for e in events if isinstance(e.get("ts"), int | float)]
    a.duration_s = round(max(times) - min(times), 3) if times else 0.0
    last = events[-1] if events else {}
    a.ended.update(complete=any(e.get("type") == "run_end" for e in events),
                   last_event={"seq": last.get("seq"), "type": last.get("type"), "round": last.get("round")})
    return a


def _model_call(a: RunAnalysis, e: dict[str, Any], stops: Counter[str]) -> None:
    tokens = e.get("tokens") or {}
    a.tokens["input"] += tokens.get("input") or 0
    a.tokens["output"] += tokens.get("output") or 0
    cost = e.get("cost")
    a.cost_usd = None if cost is None or a.cost_usd is None else a.cost_usd + cost
    if e.get("purpose") == "review":  # the reviewer's one call: spent by the job, not a round of the agent
        return
    a.rounds += 1
    stops[str(e.get("stop"))] += 1
    a.by_round.append({"round": e.get("round"), "model": e.get("model"), "stop": e.get("stop"),
                       "input": tokens.get("input"), "output": tokens.get("output"), "cost": cost,
                       "duration_ms": e.get("duration_ms"),
                       "tools": [c.get("name") for c in e.get("tool_calls") or []]})


def _tool_call(a: RunAnalysis, e: dict[str, Any], tools: dict[str, ToolStats],
               seen: dict[str, list[int | None]]) -> None:
    a.tool_calls += 1
    name = str(e.get("tool"))
    stats = tools.setdefault(name, ToolStats(name))
    ms = float(e.get("duration_ms") or 0)
    stats.calls += 1
    stats.total_ms = round(stats.total_ms + ms, 2)
    stats.max_ms = max(stats.max_ms, ms)
    kind = result_kind(e)
    stats.errors += bool(e.get("is_error"))
    stats.empty += kind == "empty"
    if kind and a.first_bad_result is None:
        a.first_bad_result = {"round": e.get("round"), "tool": name, "call_id": e.get("call_id"),
                              "args": e.get("args"), "kind": kind, "text": str(e.get("result") or "")[:500]}
    key = call_key(name, e.get("args"))
    rounds = seen.setdefault(key, [])
    rounds.append(e.get("round"))
    if len(rounds) == 3 and a.first_third_call is None:
        a.first_third_call = {"round": e.get("round"), "tool": name, "args": e.get("args"), "key": key,
                              "earlier_rounds": rounds[:2], "times": 3}


def analyze_file(path: Path) -> RunAnalysis:
    events = read_events(path)
    if not events:
        raise BadInput(f"{path}: no trace events in this file")
    return analyze(events, str(path))
