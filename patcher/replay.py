"""`patcher replay`: run a recorded job again with the model replies of its trace, and compare.

The trace's run_start names the repo, ref, test command and limits; its model_call events hold every
reply (content, tool calls with ids, names and raw arguments, stop_raw, tokens, cost). `ReplayModel`
plays those replies back in order, so no model endpoint is needed, and `pipeline.run_job` does the rest
in the sandbox as it did the first time. The run reproduces when it makes the same tool calls (tool and
arguments, in order), gets the same notes from the loop (`nudge` events: round and kind) and ends the same
way (status, reason). Asking the model more often than the trace
recorded is a divergence: the replay model raises ModelError, which ends the run with model_error.

    exit 0  reproduced        exit 1  diverged        exit 2  bad input        exit 3  no Docker / image

`regression_case()` turns a trace into a pytest case that replays it and asserts the same ending.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from patcher.agent import Limits
from patcher.config import SandboxConfig
from patcher.errors import BadInput, ModelError
from patcher.model import ModelReply, ToolCall, normalise_stop
from patcher.pipeline import JobSpec, run_job
from patcher.trace import read_events

NOTHING = "nothing (the run had ended)"


@dataclass
class Recording:
    """What a trace holds that a replay needs."""

    path: Path
    run_id: str
    start: dict[str, Any]
    model_calls: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    ending: tuple[str, str]
    engine: Literal["agent", "offline", "auto"]
    nudges: list[tuple[int, str]] = field(default_factory=list)


def load(path: Path) -> Recording:
    """The recorded run; BadInput when the file is missing or is not a finished run's trace."""
    try:
        events = read_events(path)
    except OSError as e:
        raise BadInput(f"cannot read trace {path}: {e.strerror}") from e
    starts = [e for e in events if e.get("type") == "run_start"]
    ends = [e for e in events if e.get("type") == "run_end"]
    if not starts or not isinstance(starts[0].get("repo"), str):
        raise BadInput(f"{path} is not a patcher trace (no run_start naming a repo)")
    if not ends:
        raise BadInput(f"{path} has no run_end: the run never finished, so there is no ending to compare")
    if starts[0].get("mode") == "verify":
        raise BadInput(f"{path} is the trace of `patcher verify`, which asks no model; there is nothing to replay")
    calls = [e for e in events if e.get("type") == "model_call"]
    for call in calls:
        missing = [k for k in ("tool_calls", "stop_raw", "tokens", "model") if k not in call]
        if missing or any(not {"id", "name", "args"} <= set(c) for c in call.get("tool_calls") or []):
            what = ", ".join(missing) or "tool-call"
            raise BadInput(f"{path}: the model_call of round {call.get('round')} lacks {what} fields a replay needs")
    offline = any(e.get("type") == "offline" for e in events)
    return Recording(path, str(starts[0].get("run_id", path.stem)), starts[0], calls,
                     [e for e in events if e.get("type") == "tool_call"],
                     (str(ends[-1].get("status")), str(ends[-1].get("reason"))),
                     ("auto" if calls else "offline") if offline else "agent", _nudges(events))


class ReplayModel:
    """An `LLM` that answers with the replies recorded in a trace's model_call events, in order."""

    provider = "patcher.replay"

    def __init__(self, model_calls: list[dict[str, Any]]) -> None:
        self.replies = [reply_of(e) for e in model_calls]
        self.asked = 0
        self.refused: str | None = None
        self.model = self.model_name = self.replies[0].model if self.replies else "replay"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        self.asked += 1
        if self.asked > len(self.replies):
            self.refused = (f"replay: the model was asked for reply {self.asked}, but the trace recorded only "
                            f"{len(self.replies)}; the replayed run went on longer than the recorded one")
            raise ModelError(self.refused)
        return self.replies[self.asked - 1]


def reply_of(event: dict[str, Any]) -> ModelReply:
    """The ModelReply a model_call event records. Calls the loop found in the text are re-found from it."""
    from_text = bool(event.get("calls_in_content"))
    calls = [] if from_text else [ToolCall(str(c["id"]), str(c["name"]), str(c["args"]))
                                  for c in event.get("tool_calls") or []]
    content = event.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content if content is not None or calls else ""}
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name,
                                                                              "arguments": c.arguments_raw}}
                                 for c in calls]
    stop_raw = event.get("stop_raw")
    tokens = event.get("tokens") or {}
    return ModelReply(content=content, tool_calls=calls, stop_raw=stop_raw,
                      stop=event.get("stop") or normalise_stop(stop_raw, bool(calls)),
                      tokens_in=int(tokens.get("input") or 0), tokens_out=int(tokens.get("output") or 0),
                      cost_usd=event.get("cost"), duration_ms=float(event.get("duration_ms") or 0.0),
                      model=str(event.get("model") or ""), message=message,
                      attempts=int(event.get("attempts") or 1))


def spec_for(rec: Recording, repo: str | None = None, traceback: str | None = None,
             sandbox: SandboxConfig | None = None, trace_dir: Path | None = None) -> JobSpec:
    """The job as it was recorded; `repo` points at a moved checkout, `traceback` fills in an old trace."""
    s = rec.start
    text = traceback if traceback is not None else s.get("traceback")
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{rec.path} does not record the traceback; pass it with --traceback FILE")
    try:
        return JobSpec(repo=repo or s["repo"], ref=s.get("ref"), traceback=text, test_command=s.get("test_command"),
                       limits=Limits(**(s.get("limits") or {})), engine=rec.engine,
                       sandbox=sandbox or SandboxConfig(), trace_dir=trace_dir,
                       attempts=s.get("attempts", 1),  # traces from before attempts were verified once
                       review=any(c.get("purpose") == "review" for c in rec.model_calls),  # its reply is recorded
                       **({"suite_command": s["suite_command"]} if s.get("suite_command") else {}))
    except ValidationError as e:
        raise BadInput(f"{rec.path}: the recorded job settings are not valid now: {e.errors()[0]['msg']}") from e


@dataclass
class ReplayReport:
    run_id: str
    expected_calls: list[tuple[int, str, Any]]
    got_calls: list[tuple[int, str, Any]]
    expected_ending: tuple[str, str]
    got_ending: tuple[str, str]
    message: str
    trace: str | None
    exit_code: int = 0
    expected_nudges: list[tuple[int, str]] = field(default_factory=list)
    got_nudges: list[tuple[int, str]] = field(default_factory=list)
    divergence: dict[str, Any] | None = field(default=None)

    @property
    def reproduced(self) -> bool:
        return self.divergence is None

    def render(self) -> str:
        calls = len(self.expected_calls)
        if self.exit_code == 3:
            head = f"replay of {self.run_id}: could not run ({self.message})"
        elif self.divergence is None:
            head = (f"replay of {self.run_id}: reproduced: the same {calls} tool call(s) and the same ending, "
                    f"{_ending(self.expected_ending)}")
        else:
            d = self.divergence
            what = f"tool call {d['index']}" if d["what"] == "tool call" else d["what"]
            head = (f"replay of {self.run_id}: diverged at round {d['round']} ({what})\n"
                    f"  expected: {d['expected']}\n  got:      {d['got']}")
            if self.got_ending != self.expected_ending and d["what"] == "tool call":
                head += (f"\n  ending: expected {_ending(self.expected_ending)}, got {_ending(self.got_ending)}: "
                         f"{self.message}")
        return f"{head}\nreplay trace: {self.trace}\n"


def replay(trace_path: Path, repo: str | None = None, traceback: str | None = None,
           sandbox: SandboxConfig | None = None, trace_dir: Path | None = None) -> ReplayReport:
    """Run the recorded job again with the recorded replies; compare tool calls and ending."""
    rec = load(trace_path)
    model = ReplayModel(rec.model_calls)
    result = run_job(spec_for(rec, repo, traceback, sandbox, trace_dir), llm=model)
    got_events = read_events(Path(result.trace)) if result.trace else []
    expected, got = _calls(rec.tool_calls), _calls([e for e in got_events if e.get("type") == "tool_call"])
    report = ReplayReport(rec.run_id, expected, got, rec.ending, (result.status, result.reason), result.message,
                          result.trace, exit_code=3 if result.exit_code == 3 else 0, expected_nudges=rec.nudges,
                          got_nudges=_nudges(got_events))
    report.divergence = _divergence(report, model, len(rec.model_calls))
    if report.divergence is not None and report.exit_code == 0:
        report.exit_code = 1
    return report


def _nudges(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(int(e.get("round") or 0), str(e.get("kind"))) for e in events if e.get("type") == "nudge"]


def _calls(events: list[dict[str, Any]]) -> list[tuple[int, str, Any]]:
    return [(int(e.get("round") or 0), str(e.get("tool")), e.get("args")) for e in events]


def _divergence(r: ReplayReport, model: ReplayModel, recorded: int) -> dict[str, Any] | None:
    """Where the replay first went another way: a tool call, else how often the model was asked, else the ending."""
    for i in range(max(len(r.expected_calls), len(r.got_calls))):
        want = r.expected_calls[i] if i < len(r.expected_calls) else None
        have = r.got_calls[i] if i < len(r.got_calls) else None
        if want is None or have is None or want[1:] != have[1:]:
            return {"round": (want or have or (0,))[0], "what": "tool call", "index": i + 1,
                    "expected": _call(want), "got": _call(have)}
    if r.got_nudges != r.expected_nudges:
        return {"round": next((a or b)[0] for a, b in zip_longest(r.expected_nudges, r.got_nudges) if a != b),
                "what": "the loop's notes", "expected": _notes(r.expected_nudges), "got": _notes(r.got_nudges)}
    if model.asked != recorded:
        return {"round": min(model.asked, recorded + 1), "what": "model calls",
                "expected": f"{recorded} model call(s)",
                "got": f"{model.asked} model call(s): {model.refused or r.message}"}
    if r.got_ending != r.expected_ending:
        return {"round": recorded, "what": "the ending", "expected": _ending(r.expected_ending),
                "got": f"{_ending(r.got_ending)}: {r.message}"}
    return None


def _call(call: tuple[int, str, Any] | None) -> str:
    if call is None:
        return NOTHING
    return f"{call[1]} {json.dumps(call[2], ensure_ascii=False, sort_keys=True)}"


def _notes(nudges: list[tuple[int, str]]) -> str:
    return ", ".join(f"{kind} in round {n}" for n, kind in nudges) or "no notes"


def _ending(ending: tuple[str, str]) -> str:
    return f"{ending[0]} ({ending[1]})"


CASE = '''"""Regression case from the trace of run {run_id} (written by `patcher replay --save-test`).

The recorded model replies are replayed against the recorded repository and base; the run must end
the same way ({ending}). Needs Docker and the sandbox image.
"""

from pathlib import Path

import pytest

from patcher.replay import replay

HERE = Path(__file__).parent
pytestmark = pytest.mark.docker


def test_{name}_ends_the_same_way() -> None:
    report = replay(HERE / "{name}.jsonl", repo={repo!r}, traceback={traceback})
    assert report.got_ending == report.expected_ending, report.render()
'''


def regression_case(trace_path: Path, dest_dir: Path, repo: str | None = None, traceback: str | None = None
                    ) -> Path:
    """Copies the trace to dest_dir/<name>.jsonl and writes dest_dir/test_replay_<name>.py; returns the module."""
    rec = load(trace_path)
    needs_tb = not isinstance(rec.start.get("traceback"), str)
    spec_for(rec, repo, traceback)  # refuses a case that could never run
    name = "run_" + re.sub(r"\W", "_", rec.run_id).strip("_").lower()
    dest_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(trace_path, dest_dir / f"{name}.jsonl")
    tb_arg = "None"
    if needs_tb and traceback is not None:
        (dest_dir / f"{name}.traceback.txt").write_text(traceback, encoding="utf-8")
        tb_arg = f'(HERE / "{name}.traceback.txt").read_text(encoding="utf-8")'
    module = dest_dir / f"test_replay_{name}.py"
    module.write_text(CASE.format(run_id=rec.run_id, name=name, repo=repo, traceback=tb_arg,
                                  ending=_ending(rec.ending)), encoding="utf-8")
    return module


def replay_command(trace_file: str, repo: str | None = None, traceback: str | None = None,
                   save_test: Path | None = None) -> tuple[str, int]:
    """What `patcher replay` prints, and its exit code; the regression case is saved only when reproduced."""
    path = Path(trace_file).expanduser()
    if not path.is_file():
        raise BadInput(f"no trace file at {trace_file}")
    report = replay(path, repo, traceback)
    text = report.render()
    if save_test is not None:
        if report.reproduced:
            text += f"regression case: {regression_case(path, save_test, repo, traceback)}\n"
        else:
            text += "regression case not saved: the replay does not reproduce the recorded run\n"
    return text, report.exit_code
