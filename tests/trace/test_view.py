"""`patcher trace` on a recorded 52-round looping run: the analysis, SQL over one run or many, the CLI.

The golden trace (tests/fixtures/traces/looping_52.jsonl) was recorded for real by regenerate.py beside it;
one test records a fresh run the same way, so the fixture cannot drift from what the agent writes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patcher.cli import app
from patcher.trace import analyze, analyze_file, read_events
from tests.fixtures.traces import regenerate
from tests.fixtures.traces.regenerate import GOLDEN, REPORT, record_looping_run

BY_TOOL = "select tool, count(*) as calls from events where type = 'tool_call' group by tool order by calls desc, tool"
OVER_BUDGET = ("select s.run_id, any_value(s.limits.max_cost_usd) as budget, sum(m.cost) as spent from events s "
               "join events m on m.run_id = s.run_id and m.type = 'model_call' where s.type = 'run_start' "
               "group by s.run_id having spent > budget")


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["trace", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_report_names_round_3s_empty_result_and_the_repeat() -> None:
    code, out, _ = cli(str(GOLDEN))
    assert code == 0
    lines = out.splitlines()
    assert "52 rounds, 52 tool calls" in lines[1]
    assert lines[2].startswith("ended: not_verified (round_limit)")
    assert "first empty or failed result: round 3, search_code {\"pattern\": \"discount\"} -> empty: " \
           "no matches for 'discount' in ." in lines
    assert "first third identical call: round 8, search_code {\"pattern\": \"discount\"} " \
           "(same call in rounds 3 and 4; 14 times in all)" in lines


def test_the_report_matches_the_golden_file() -> None:
    assert regenerate.report() == REPORT.read_text(), "regenerate with: python -m tests.fixtures.traces.regenerate"


def test_json_analysis_of_the_looping_run() -> None:
    code, out, _ = cli(str(GOLDEN), "--json")
    a = json.loads(out)
    assert code == 0 and (a["run_id"], a["rounds"], a["tool_calls"], a["stops"]) == (
        "looping-52", 52, 52, {"wants_tool": 52})
    assert a["first_bad_result"] | {"text": ""} == {"round": 3, "tool": "search_code", "call_id": "call_3",
                                                     "args": {"pattern": "discount"}, "kind": "empty", "text": ""}
    assert a["first_third_call"]["round"] == 8 and a["first_third_call"]["earlier_rounds"] == [3, 4]
    assert [r["round"] for r in a["by_round"]] == list(range(1, 53))
    assert sum(r["cost"] for r in a["by_round"]) == pytest.approx(a["cost_usd"])
    assert sum(r["input"] for r in a["by_round"]) == a["tokens"]["input"]
    assert a["tools"][0]["tool"] == "run_test"  # slowest first: each run_test starts a Python process
    assert a["slowest_calls"][0]["duration_ms"] == max(t["max_ms"] for t in a["tools"])
    assert (a["ended"]["reason"], a["ended"]["guard"], a["ended"]["complete"]) == ("round_limit", "round_limit", True)


def test_keys_in_another_order_are_the_same_call() -> None:
    reads = [e for e in read_events(GOLDEN) if e["type"] == "tool_call" and e["tool"] == "read_file"]
    assert [(e["round"], list(e["args"])) for e in reads[1:4]] == [
        (5, ["path", "start_line"]), (6, ["start_line", "path"]), (9, ["path", "start_line"])]
    without_searches = [e for e in read_events(GOLDEN) if e.get("tool") != "search_code"]
    third = analyze(without_searches).first_third_call
    assert third is not None and (third["round"], third["tool"], third["earlier_rounds"]) == (9, "read_file", [5, 6])


def test_the_reviewer_s_call_is_spend_and_not_a_round() -> None:
    events = read_events(GOLDEN)
    review = {"type": "model_call", "round": None, "purpose": "review", "model": "gpt-4o-mini", "stop": "finished",
              "tokens": {"input": 1000, "output": 50}, "cost": 0.25, "tool_calls": []}
    before, after = analyze(events), analyze([*events[:-1], review, events[-1]])
    assert (after.rounds, after.stops, after.by_round) == (before.rounds, before.stops, before.by_round)
    assert after.tokens == {"input": before.tokens["input"] + 1000, "output": before.tokens["output"] + 50}
    assert after.cost_usd == pytest.approx((before.cost_usd or 0) + 0.25)


def test_a_fresh_recording_reads_the_same(tmp_path: Path) -> None:
    a = analyze_file(record_looping_run(tmp_path / "fresh.jsonl"))
    assert (a.rounds, a.tool_calls, a.ended["reason"]) == (52, 52, "round_limit")
    assert a.first_bad_result is not None and (a.first_bad_result["round"], a.first_bad_result["kind"]) == (3, "empty")
    assert a.first_third_call is not None and (a.first_third_call["round"], a.first_third_call["tool"]) == (
        8, "search_code")


def test_sql_counts_calls_by_tool() -> None:
    code, out, _ = cli(str(GOLDEN), "--sql", BY_TOOL)
    assert code == 0
    assert out.splitlines() == ["tool         calls", "read_file       25", "search_code     15", "run_test        12",
                                "(3 rows)"]
    code, out, _ = cli(str(GOLDEN), "--sql", BY_TOOL, "--json")
    assert json.loads(out) == [{"tool": "read_file", "calls": 25}, {"tool": "search_code", "calls": 15},
                               {"tool": "run_test", "calls": 12}]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A directory of two runs: the looping one, and one on a tight budget killed after 14 tool calls."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(GOLDEN, runs / "looping-52.jsonl")
    lines = []
    for line in GOLDEN.read_text().splitlines()[:30]:
        event = json.loads(line) | {"run_id": "tight-budget"}
        if event["type"] == "run_start":
            event["limits"]["max_cost_usd"] = 0.001
        lines.append(json.dumps(event))
    (runs / "tight-budget.jsonl").write_text("\n".join(lines) + '\n{"run_id": "tight-budget", "seq": 31, "ty')
    return runs


def test_sql_over_a_directory_finds_the_run_that_crossed_its_budget(runs: Path) -> None:
    code, out, _ = cli(str(runs), "--sql", OVER_BUDGET, "--json")
    [row] = json.loads(out)
    assert code == 0 and row["run_id"] == "tight-budget" and row["budget"] == 0.001 and row["spent"] > 0.001
    code, out, _ = cli(str(runs), "--sql", "select run_id, count(*) as n from events group by run_id order by 1")
    assert out.splitlines()[1:3] == ["looping-52    107", "tight-budget   30"]  # the torn last line is skipped


def test_a_directory_gives_one_line_per_run_and_a_run_id_is_found_under_patcher_home(
        runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = cli(str(runs))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4
    assert lines[1].split()[:5] == ["looping-52", "52", "52", "not_verified", "(round_limit)"]
    assert lines[2].split()[:4] == ["tight-budget", "15", "14", "incomplete"]
    monkeypatch.setenv("PATCHER_HOME", str(runs.parent))
    code, out, _ = cli("tight-budget")
    assert code == 0 and "ended: incomplete: no run_end; the trace stops at event 30 (model_call, round 15)" in out
    assert cli("tight")[0] == 0  # a unique prefix of a run id
    shutil.copy(runs / "looping-52.jsonl", runs / "looping-53.jsonl")
    code, _, err = cli("looping")
    assert code == 2 and err.startswith("patcher: run id 'looping' is ambiguous: 2 runs start with it")


@pytest.mark.parametrize("args", [["/no/such/trace.jsonl"], ["no-such-run"], [str(GOLDEN), "--sql", "selec 1"]],
                         ids=["path", "run_id", "sql"])
def test_bad_input_exits_2_with_one_line(args: list[str], tmp_path: Path) -> None:
    patcher = Path(sys.executable).parent / "patcher"
    env = {"PATH": "/usr/bin:/bin", "PATCHER_HOME": str(tmp_path)}
    done = subprocess.run([str(patcher), "trace", *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("patcher: ")


def test_an_empty_directory_is_bad_input(tmp_path: Path) -> None:
    code, _, err = cli(str(tmp_path))
    assert code == 2 and err.strip() == f"patcher: {tmp_path}: the directory holds no .jsonl trace files"
