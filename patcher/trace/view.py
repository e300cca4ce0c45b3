"""`patcher trace`: a run's trace read round by round, or many runs queried with SQL.

    resolve(target)      a .jsonl file, a directory of them, or a run id under $PATCHER_HOME/runs
    analyze(events)      analysis.py: rounds and stops counted, the first empty or failed tool result,
                         the first third identical call, slowest tools, tokens and cost by round, the ending
    render(analysis)     render.py: the report a person reads (render_many: one line per run)
    query(files, sql)    DuckDB over the JSONL, exposed as a view named `events`

Works on traces of runs still going or killed mid-way: a missing run_end is reported, not an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from patcher.config import patcher_home
from patcher.errors import BadInput
from patcher.trace.analysis import analyze_file
from patcher.trace.render import format_table, render, render_many


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
