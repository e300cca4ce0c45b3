"""A run's analysis as the report a person reads (render; render_many: one line per run) and aligned tables."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from patcher.trace.analysis import RunAnalysis

CELL = 80


def render(a: RunAnalysis) -> str:
    lines = [f"run {a.run_id}  {a.file}",
             f"{a.rounds} rounds, {a.tool_calls} tool calls, {a.events} events, {a.duration_s:.1f} s",
             f"ended: {_ending(a)}",
             *environment_lines(a.environment),
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
    if a.nudges:
        lines.append("notes before an edit: " + ", ".join(f"{n['kind']} in round {n['round']}" for n in a.nudges))
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


def environment_lines(environment: dict[str, Any]) -> list[str]:
    """`python: …` and `setup: …`, doctor-style: the interpreter and why, what the setup read and installed."""
    python, setup = environment.get("python"), environment.get("setup")
    lines = [f"python: {python.get('version')} in {python.get('image')} ({python.get('source')})"] if python else []
    lines += [f"  tried first: {t.get('version')} in {t.get('image')} ({t.get('source')}), left: {t.get('left')}"
              for t in (python or {}).get("tried") or []]
    if setup:
        wanted = ", ".join(f"{r['requirement']} ({r['from']})" for r in setup.get("requirements") or [])
        lines.append(f"setup: read {', '.join(setup.get('files') or []) or 'nothing'}; "
                     + (f"ran `{setup['command']}`" if setup.get("command") else f"installed {wanted or 'nothing'}")
                     + f"; the environment holds {' '.join(setup.get('installed') or []) or 'nothing of its own'}")
        lines += [f"  ran `{c.get('command')}`" + (f" (exit code {c['exit_code']})" if c.get("exit_code") else "")
                  for c in setup.get("commands") or [] if len(setup.get("commands") or []) > 1]
    elif "setup" in environment:
        lines.append("setup: none (nothing to install: the sandbox image as it is)")
    return lines


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
