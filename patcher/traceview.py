"""`patcher trace`: a run's trace read round by round, or many runs queried with SQL.

    resolve(target)      a .jsonl file, a directory of them, or a run id under $PATCHER_HOME/runs
    analyze(events)      rounds and stops counted, the first empty or failed tool result, the first third
                         identical call, slowest tools, tokens and cost by round, how the run ended
    render(analysis)     the report a person reads (render_many: one line per run)
    query(files, sql)    DuckDB over the JSONL, exposed as a view named `events`

Works on traces of runs still going or killed mid-way: a missing run_end is reported, not an error.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadInput
from .guards import call_key
from .trace import read_events

EMPTY = re.compile(r"^no matches for |returned no output|\(no output\)\s*$| is empty$")
"""Tool results that carry nothing: a search with no match, a command with no output, an empty file."""
CELL = 80


def patcher_home() -> Path:
    return Path(os.environ.get("PATCHER_HOME") or Path.home() / ".patcher")


def resolve(target: str) -> list[Path]:
    """The trace files `target` names; BadInput with one sentence when it names none."""
    path = Path(target).expanduser()
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise BadInput(f"{target}: the directory holds no .jsonl trace files")
        return files
    if "/" in target or os.sep in target or target.endswith(".jsonl"):
        raise BadInput(f"{target}: no such trace file or directory")
    runs = patcher_home() / "runs"
    if target and runs.is_dir():
        exact = runs / f"{target}.jsonl"
        matches = [exact] if exact.is_file() else sorted(p for p in runs.glob("*.jsonl") if p.name.startswith(target))
        if len(matches) == 1:
            return matches
        if matches:
            names = ", ".join(p.stem for p in matches[:5])
            raise BadInput(f"run id {target!r} is ambiguous: {len(matches)} runs start with it ({names} …)")
    raise BadInput(f"no trace file, directory or run id {target!r} (run ids are looked up in {runs})")


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
        elif kind == "verify":
            a.verify.append({k: e.get(k) for k in ("phase", "command", "outcome", "reason", "duration_ms")})
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
    a.rounds += 1
    stops[str(e.get("stop"))] += 1
    tokens = e.get("tokens") or {}
    a.tokens["input"] += tokens.get("input") or 0
    a.tokens["output"] += tokens.get("output") or 0
    cost = e.get("cost")
    a.cost_usd = None if cost is None or a.cost_usd is None else a.cost_usd + cost
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


def trace_command(target: str, sql: str | None = None, as_json: bool = False) -> str:
    """What `patcher trace` prints: the analysis of one run (one line per run for a directory), or a query."""
    files = resolve(target)
    if sql is not None:
        columns, rows = query(files, sql)
        if as_json:
            return json.dumps([dict(zip(columns, row, strict=True)) for row in rows], indent=2, default=str) + "\n"
        return format_table(columns, rows)
    analyses = [analyze_file(f) for f in files]
    many = Path(target).expanduser().is_dir()
    if as_json:
        payload: Any = [a.as_json() for a in analyses] if many else analyses[0].as_json()
        return json.dumps(payload, indent=2, default=str) + "\n"
    return render_many(analyses) if many else render(analyses[0])


def query(files: list[Path], sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Runs `sql` with the events of `files` as a view named `events` (one row per event, one column per field)."""
    import duckdb

    sources = "[" + ", ".join(_sql_string(str(f)) for f in files) + "]"
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"create view events as select * from read_json_auto({sources}, format='newline_delimited', "
                    "union_by_name=true, sample_size=-1, ignore_errors=true, filename=true) where type is not null")
        cursor = con.execute(sql)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"the query failed: {first}") from e
    finally:
        con.close()


def _sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# rendering


def render(a: RunAnalysis) -> str:
    lines = [f"run {a.run_id}  {a.file}",
             f"{a.rounds} rounds, {a.tool_calls} tool calls, {a.events} events, {a.duration_s:.1f} s",
             f"ended: {_ending(a)}",
             "stops: " + (", ".join(f"{k} {v}" for k, v in a.stops.items()) or "none")]
    bad = a.first_bad_result
    lines.append("first empty or failed result: " + (
        f"round {bad['round']}, {bad['tool']} {_args(bad['args'])} -> {bad['kind']}: {_one_line(bad['text'])}"
        if bad else "none"))
    rep = a.first_third_call
    lines.append("first third identical call: " + (
        f"round {rep['round']}, {rep['tool']} {_args(rep['args'])} (same call in rounds "
        f"{rep['earlier_rounds'][0]} and {rep['earlier_rounds'][1]}; {rep['times']} times in all)" if rep else "none"))
    budget = "" if a.max_cost_usd is None else f" of ${a.max_cost_usd:g} budget" + (" (CROSSED)" if a.over_budget
                                                                                      else "")
    cost = "unknown" if a.cost_usd is None else f"${a.cost_usd:.6f}"
    lines.append(f"tokens: {a.tokens['input']} in, {a.tokens['output']} out; cost {cost}{budget}")
    lines += [f"verify {v['phase']}: {v['outcome']}" + (f" ({v['reason']})" if v.get("reason") else "")
              for v in a.verify]
    lines += ["", "tools, slowest first:"]
    lines.append(format_table(["tool", "calls", "errors", "empty", "total_ms", "max_ms"],
                              [tuple(asdict(t).values()) for t in a.tools], indent="  ", count=False))
    lines.append("slowest calls:")
    lines += [f"  round {c['round']}: {c['tool']} {_args(c['args'])} {c['duration_ms']} ms" for c in a.slowest_calls]
    lines += ["", "tokens and cost by round:"]
    rows = [(r["round"], r["stop"], r["input"], r["output"], r["cost"], r["duration_ms"], " ".join(r["tools"]))
            for r in a.by_round]
    lines.append(format_table(["round", "stop", "in", "out", "cost", "ms", "tools"], rows, indent="  ",
                              count=False))
    return "\n".join(lines)


def render_many(analyses: list[RunAnalysis]) -> str:
    rows = []
    for a in analyses:
        bad, rep = a.first_bad_result, a.first_third_call
        rows.append((a.run_id, a.rounds, a.tool_calls, _ending(a, short=True), a.cost_usd,
                     f"r{bad['round']} {bad['tool']} {bad['kind']}" if bad else "",
                     f"r{rep['round']} {rep['tool']}" if rep else ""))
    return format_table(["run", "rounds", "tool_calls", "ended", "cost", "first_empty_or_failed", "third_call"],
                        rows)


def _ending(a: RunAnalysis, short: bool = False) -> str:
    e = a.ended
    if e.get("status"):
        guard = f"; guard {e['guard']}" if e.get("guard") and e["guard"] != e.get("reason") else ""
        return f"{e['status']} ({e['reason']})" + ("" if short else f": {e.get('message')}{guard}")
    if e.get("guard"):
        return f"guard {e['guard']}, no run_end" + ("" if short else f": {e.get('guard_message')}")
    last = e.get("last_event") or {}
    where = f", round {last['round']}" if last.get("round") is not None else ""
    if short:
        return "incomplete"
    return (f"incomplete: no run_end; the trace stops at event {last.get('seq')} ({last.get('type')}{where}), "
            "so the run was killed or is still going")


def _args(args: Any) -> str:
    text = args if isinstance(args, str) else json.dumps(args, sort_keys=True, ensure_ascii=False)
    return _cut(text, 120)


def _one_line(text: str) -> str:
    return _cut(" | ".join(line.strip() for line in text.strip().splitlines() if line.strip()), 160)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) >= 1e6 else f"{v:.6g}"
    if isinstance(v, dict | list):
        v = json.dumps(v, ensure_ascii=False, default=str)
    return _cut(str(v).replace("\n", "\\n"), CELL)


def format_table(columns: list[str], rows: list[tuple[Any, ...]], indent: str = "", count: bool = True) -> str:
    """Aligned plain text: numbers to the right, the rest to the left; a row count under it."""
    cells = [[_cell(v) for v in row] for row in rows]
    numeric = [all(isinstance(r[i], int | float) or r[i] is None for r in rows) and bool(rows)
               for i in range(len(columns))]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return (indent + "  ".join(parts)).rstrip()

    out = [line(columns), *(line(r) for r in cells)]
    if count:
        out.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return "\n".join(out) + "\n"
