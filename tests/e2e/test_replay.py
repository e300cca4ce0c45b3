"""`patcher replay` on a recorded verified run: real Docker, the scripted model only while recording.

The replays run with no model server at all; the tampered trace changes one recorded reply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patcher.config import SandboxConfig
from patcher.errors import BadInput, ModelError
from patcher.pipeline import JobSpec, run_job
from patcher.replay import ReplayModel, load, spec_for
from patcher.testing import ScriptedModelServer, reply
from patcher.trace import read_events
from tests.support.example import FILES, FIX, PRODUCTION_TB
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]
PATCHER = str(ROOT / ".venv/bin/patcher")
REPRO = "python -m pytest -q tests/test_pagination.py"


def patcher(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "PATCHER_")) or k == "PATCHER_SANDBOX_IMAGE"}  # this checkout's image
    return subprocess.run([PATCHER, *args], capture_output=True, text=True, timeout=600,
                          env=env | {"PATCHER_HOME": str(home)})


def tool_calls(trace: Path) -> list[tuple[str, Any]]:
    return [(e["tool"], e["args"]) for e in read_events(trace) if e["type"] == "tool_call"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> dict[str, Path]:
    """A verified agent run, recorded: its repo, its trace, and the traceback file it was given."""
    where = tmp_path_factory.mktemp("replay")
    repo = make_repo(where / "shop", FILES)
    look = ("read_file", {"path": "shop/pagination.py"})
    with ScriptedModelServer([reply("Reading it.", [look]), reply(None, [FIX]), reply("Fixed the bound.")]) as srv:
        spec = JobSpec(repo=str(repo), traceback=PRODUCTION_TB, test_command=REPRO, model=srv.model_config(),
                       engine="agent", sandbox=SandboxConfig(image=sandbox_image), trace_dir=where / "runs")
        result = run_job(spec)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    (where / "tb.txt").write_text(PRODUCTION_TB)
    return {"repo": repo, "trace": Path(result.trace or ""), "tb": where / "tb.txt", "dir": where}


@pytest.mark.docker
def test_a_verified_run_replays_without_a_model_and_saves_a_passing_regression_case(
        recorded: dict[str, Path], tmp_path: Path) -> None:
    cases = tmp_path / "tests" / "regressions"
    out = patcher("replay", str(recorded["trace"]), "--traceback", str(recorded["tb"]), "--save-test", str(cases),
                  home=tmp_path / "home")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reproduced: the same 2 tool call(s) and the same ending, verified (verified)" in out.stdout
    replayed = Path(out.stdout.split("replay trace: ")[1].splitlines()[0])
    assert replayed.parent == tmp_path / "home" / "runs" and replayed != recorded["trace"]
    assert tool_calls(replayed) == tool_calls(recorded["trace"])
    assert [e["type"] for e in read_events(replayed)][-1] == "run_end"
    [module] = cases.glob("test_replay_*.py")
    assert f"regression case: {module}" in out.stdout
    assert (cases / module.name.removeprefix("test_replay_")).with_suffix(".jsonl").read_bytes() == \
        recorded["trace"].read_bytes()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                          str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(module)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={**os.environ, "PATCHER_HOME": str(tmp_path / "home2")})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


@pytest.mark.docker
def test_a_tampered_reply_is_a_divergence_at_its_round(recorded: dict[str, Path], tmp_path: Path) -> None:
    events = read_events(recorded["trace"])
    fix_call = next(e for e in events if e["type"] == "model_call" and e["round"] == 2)
    args = json.loads(fix_call["tool_calls"][0]["args"])
    fix_call["tool_calls"][0]["args"] = json.dumps(args | {"new_text": "min(end, len(items) + 2)"})
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = patcher("replay", str(tampered), "--traceback", str(recorded["tb"]), "--save-test", str(tmp_path / "t"),
                  home=tmp_path / "home")
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("diverged at round 2 (tool call 2)")
    assert lines[1].startswith("  expected: edit_file {") and '"new_text": "min(end, len(items))"' in lines[1]
    assert lines[2].startswith("  got:      edit_file {") and "len(items) + 2" in lines[2]
    # The wrong fix is rejected, the agent is told why and asked again: a reply the recording never had.
    assert lines[3].startswith("  ending: expected verified (verified), got error (model_error): replay: the model "
                               "was asked for reply 4")
    assert "regression case not saved" in out.stdout and not (tmp_path / "t").exists()


@pytest.mark.docker
def test_asking_the_model_once_more_than_recorded_is_a_divergence(recorded: dict[str, Path], tmp_path: Path) -> None:
    from patcher.replay import replay

    last = max(e["round"] for e in read_events(recorded["trace"]) if e["type"] == "model_call")
    short = tmp_path / "short.jsonl"
    short.write_text("".join(line + "\n" for line in recorded["trace"].read_text().splitlines()
                             if not ('"type": "model_call"' in line and json.loads(line)["round"] == last)))
    report = replay(short, traceback=PRODUCTION_TB, trace_dir=tmp_path / "runs")
    assert report.exit_code == 1 and report.got_calls == report.expected_calls
    assert report.divergence == {"round": 3, "what": "model calls", "expected": "2 model call(s)",
                                 "got": "3 model call(s): replay: the model was asked for reply 3, but the trace "
                                        "recorded only 2; the replayed run went on longer than the recorded one"}
    assert "diverged at round 3 (model calls)" in report.render()


@pytest.mark.docker
def test_a_moved_checkout_replays_with_repo(recorded: dict[str, Path], tmp_path: Path) -> None:
    from patcher.replay import replay

    moved = make_repo(tmp_path / "elsewhere", FILES)
    report = replay(recorded["trace"], repo=str(moved), traceback=PRODUCTION_TB, trace_dir=tmp_path / "runs")
    assert report.reproduced and report.exit_code == 0, report.render()
    assert report.got_calls == report.expected_calls and len(report.got_calls) == 2
    assert json.loads(Path(report.trace or "").read_text().splitlines()[0])["repo"] == str(moved)


GIVE_UP_FIRST = reply(None, [("give_up", {"reason": "the range goes one past the list; cannot fix without the tests"})])
PROSE_FIRST = reply("The range goes one past the list. I would give_up: it cannot be fixed without the tests.")


@pytest.fixture(scope="module", params=["give_up", "finished"])
def nudged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           sandbox_image: str) -> dict[str, Any]:
    """A run where the agent gave up before any edit (by the tool, or in prose), was nudged, then fixed it."""
    where = tmp_path_factory.mktemp("nudged")
    repo = make_repo(where / "shop", FILES)
    first = GIVE_UP_FIRST if request.param == "give_up" else PROSE_FIRST
    with ScriptedModelServer([first, reply(None, [FIX]), reply("Fixed the bound.")]) as srv:
        spec = JobSpec(repo=str(repo), traceback=PRODUCTION_TB, test_command=REPRO, model=srv.model_config(),
                       engine="agent", sandbox=SandboxConfig(image=sandbox_image), trace_dir=where / "runs")
        result = run_job(spec)
    assert (result.status, result.reason, result.agent.rounds) == ("verified", "verified", 3), result.message
    return {"repo": repo, "trace": Path(result.trace or ""), "kind": request.param}


@pytest.mark.docker
def test_a_nudged_run_replays_with_its_nudge(nudged: dict[str, Any], tmp_path: Path) -> None:
    from patcher.replay import replay

    [note] = [e for e in read_events(nudged["trace"]) if e["type"] == "nudge"]
    assert (note["kind"], note["round"]) == (nudged["kind"], 1) and "shop/pagination.py:" in note["note"]
    report = replay(nudged["trace"], trace_dir=tmp_path / "runs")
    assert report.reproduced and report.exit_code == 0, report.render()
    assert report.got_nudges == report.expected_nudges == [(1, nudged["kind"])]
    assert report.got_ending == ("verified", "verified")


@pytest.mark.docker
def test_a_trace_whose_nudge_is_missing_diverges_at_the_notes(nudged: dict[str, Any], tmp_path: Path) -> None:
    from patcher.replay import replay

    lines = nudged["trace"].read_text().splitlines()
    edited = tmp_path / "no-nudge.jsonl"
    edited.write_text("".join(line + "\n" for line in lines if '"type": "nudge"' not in line))
    report = replay(edited, trace_dir=tmp_path / "runs")
    assert report.divergence == {"round": 1, "what": "the loop's notes", "expected": "no notes",
                                 "got": f"{nudged['kind']} in round 1"}
    assert report.exit_code == 1 and "diverged at round 1 (the loop's notes)" in report.render()


def test_a_bad_path_exits_2_with_one_line(tmp_path: Path) -> None:
    out = patcher("replay", str(tmp_path / "nope.jsonl"), home=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"patcher: no trace file at {tmp_path / 'nope.jsonl'}\n"
    (tmp_path / "junk.jsonl").write_text("not json\n{}\n")
    out = patcher("replay", str(tmp_path / "junk.jsonl"), home=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "is not a patcher trace" in out.stderr


def write_trace(path: Path, *events: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps({"run_id": "r1", "seq": i, "ts": 0, **e}) + "\n"
                            for i, e in enumerate(events, 1)))
    return path


START = {"type": "run_start", "repo": "/somewhere", "ref": "abc", "test_command": REPRO,
         "limits": {"max_rounds": 7, "max_cost_usd": None, "timeout_s": 60.0, "repeat_limit": 3,
                    "context_tokens": 48000}}
END = {"type": "run_end", "status": "not_verified", "reason": "no_change"}
CALL = {"type": "model_call", "round": 1, "model": "m-1", "stop_raw": "tool_calls", "stop": "wants_tool",
        "tokens": {"input": 10, "output": 3}, "cost": 0.5, "duration_ms": 1.0, "calls_in_content": False,
        "tool_calls": [{"id": "call_9", "name": "read_file", "args": '{"path": "a.py"}'}], "content": None}


def test_the_replay_model_plays_the_recorded_replies_and_refuses_one_more(tmp_path: Path) -> None:
    rec = load(write_trace(tmp_path / "t.jsonl", START, CALL, END))
    model = ReplayModel(rec.model_calls)
    first = model.complete([], [])
    assert (first.stop, first.stop_raw, first.tokens_in, first.tokens_out, first.cost_usd, first.model) == (
        "wants_tool", "tool_calls", 10, 3, 0.5, "m-1")
    assert [(c.id, c.name, c.arguments_raw) for c in first.tool_calls] == [("call_9", "read_file", '{"path": "a.py"}')]
    assert first.message["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path": "a.py"}'}
    with pytest.raises(ModelError, match="asked for reply 2, but the trace recorded only 1"):
        model.complete([], [])


def test_the_job_is_rebuilt_from_run_start(tmp_path: Path) -> None:
    rec = load(write_trace(tmp_path / "t.jsonl", START | {"traceback": PRODUCTION_TB}, CALL, END))
    spec = spec_for(rec)
    assert (spec.repo, spec.ref, spec.test_command, spec.traceback) == ("/somewhere", "abc", REPRO, PRODUCTION_TB)
    assert (spec.limits.max_rounds, spec.limits.timeout_s, spec.engine) == (7, 60.0, "agent")
    assert spec_for(rec, repo="/moved").repo == "/moved"
    assert spec.review is False  # the recorded run had no review: the replay asks for none
    review = CALL | {"round": None, "purpose": "review", "tool_calls": [], "stop_raw": "stop", "content": "{}"}
    reviewed = load(write_trace(tmp_path / "r.jsonl", START | {"traceback": PRODUCTION_TB}, CALL, review, END))
    assert spec_for(reviewed).review is True and len(ReplayModel(reviewed.model_calls).replies) == 2
    with pytest.raises(BadInput, match="does not record the traceback; pass it with --traceback"):
        spec_for(load(write_trace(tmp_path / "old.jsonl", START, CALL, END)))
    with pytest.raises(BadInput, match="no run_end"):
        load(write_trace(tmp_path / "killed.jsonl", START, CALL))
    with pytest.raises(BadInput, match="round 1 lacks stop_raw"):
        load(write_trace(tmp_path / "thin.jsonl", START, {k: v for k, v in CALL.items() if k != "stop_raw"}, END))
