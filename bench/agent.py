"""The agent loop's own overhead per round, model and tool time excluded.

Runs Agent.run() for ROUNDS rounds against ScriptedModelServer on loopback (real openai client) and a
LocalSandbox (real tool server), one cheap read_file per round with varying arguments. Overhead is the
wall time of run() minus the model calls' and tool calls' duration_ms from the trace: as a mean over the
run, and per round (from the gaps between trace events) as median and p95. "Model" time includes the
openai client's own request building, which grows with the history.

    .venv/bin/python -m bench.agent [ROUNDS]

(Run it as a module: run as a file, bench/sandbox.py would shadow the `sandbox` package.)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from patcher.agent import Agent, Limits
from patcher.intake import stage_repo
from patcher.model import OpenAIModel
from patcher.sandbox import LocalSandbox
from patcher.testing import ScriptedModelServer, Step, reply
from patcher.trace import Trace, read_events

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "PATH": "/usr/bin:/bin"}


def make_repo(path: Path) -> Path:
    path.mkdir()
    (path / "app.py").write_text("".join(f"def f{n}(x):\n    return x + {n}\n" for n in range(200)))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=GIT_ENV, check=True, capture_output=True)
    return path


def read_step(n: int) -> Step:
    return reply(None, [("read_file", {"path": "app.py", "start_line": n % 300 + 1, "end_line": n % 300 + 20})])


def main(rounds: int = 200) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        staged = stage_repo(str(make_repo(Path(tmp) / "repo")))
        steps: list[Step] = [read_step(n) for n in range(rounds - 1)] + [reply("done")]
        with ScriptedModelServer(steps) as server, LocalSandbox(staged) as box, \
                OpenAIModel(server.model_config()) as model:
            trace = Trace(Path(tmp) / "trace.jsonl", "bench")
            agent = Agent(model, box, trace, Limits(max_rounds=rounds + 1, repeat_limit=rounds + 1))
            started, started_ts = time.perf_counter(), time.time()
            result = agent.run("Fix the crash below.\n\nTraceback: KeyError: 'x'")
            wall_ms = (time.perf_counter() - started) * 1000
            trace.close()
            events = read_events(trace.path)
        staged.cleanup()
    assert result.reason == "finished" and result.rounds == rounds, result
    model_ms = sum(e["duration_ms"] for e in events if e["type"] == "model_call")
    tool_ms = sum(e["duration_ms"] for e in events if e["type"] == "tool_call")
    report: dict[str, Any] = {"rounds": result.rounds, "tool_calls": result.tool_calls, "wall_ms": wall_ms,
                              "model_ms": model_ms, "tool_ms": tool_ms}
    print(" ".join(f"{k}={v:.0f}" if isinstance(v, float) else f"{k}={v}" for k, v in report.items()))
    per_round = sorted(overhead_per_round(events, started_ts))
    p95 = per_round[min(len(per_round) - 1, round(0.95 * len(per_round)))]
    print(f"loop overhead: {(wall_ms - model_ms - tool_ms) / rounds:.3f} ms/round mean, "
          f"{statistics.median(per_round):.3f} median, {p95:.3f} p95 "
          f"(model {model_ms / rounds:.2f} ms/round, tool {tool_ms / rounds:.2f} ms/round)")


def overhead_per_round(events: list[dict[str, Any]], started_ts: float) -> list[float]:
    """Per round: time between consecutive model/tool events, minus the model or tool time they record."""
    per_round: dict[int, float] = {}
    last = started_ts
    for e in events:
        if e["type"] in ("model_call", "tool_call"):
            gap = (e["ts"] - last) * 1000 - e["duration_ms"]
            per_round[e["round"]] = per_round.get(e["round"], 0.0) + gap
            last = e["ts"]
    return list(per_round.values())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
