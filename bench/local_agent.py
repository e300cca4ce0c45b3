"""The agent (`--engine agent`) on every bundled example, against an OpenAI-compatible endpoint.

For each example (examples/offline/* and examples/shop) one `run_job` with engine=agent on real Docker,
the model at the URL given; per example it prints the stop reason, the rounds, whether an edit was tried
(a write_file or edit_file that succeeded), whether the agent was nudged before giving up, and whether
the diff was verified. Meant for a small local model (llama.cpp's llama-server, see docs/models.md): slow, so
kept out of CI. The small server's context is short, so the agent's budget is set here (--context-tokens).

    .venv/bin/python -m bench.local_agent --base-url http://127.0.0.1:8080/v1 [--model local]
        [--max-rounds 12] [--context-tokens 9000] [--max-tokens 1024] [--keep DIR] [NAME ...]

(As a module: run as a file, bench/sandbox.py would shadow the `sandbox` package.)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.offline import as_repo, examples
from patcher.agent import Limits
from patcher.config import SandboxConfig
from patcher.model import ModelConfig
from patcher.pipeline import JobSpec, run_job
from patcher.trace import read_events

EDITS = ("write_file", "edit_file")


def row(name: str, result: Any, seconds: float) -> dict[str, Any]:
    events = read_events(Path(result.trace)) if result.trace else []
    calls = [e for e in events if e.get("type") == "tool_call"]
    return {"example": name, "status": result.status, "reason": result.reason,
            "stop": result.agent.stop if result.agent else "-", "rounds": result.agent.rounds if result.agent else 0,
            "edit_tried": any(e.get("tool") in EDITS and not e.get("is_error") for e in calls),
            "nudged": sum(1 for e in events if e.get("type") == "nudge"),
            "verified": result.status == "verified", "seconds": round(seconds), "trace": result.trace}


def show(rows: list[dict[str, Any]]) -> None:
    print(f"{'example':<14} {'stop':<14} {'reason':<16} {'rounds':>6} {'edit':>5} {'nudges':>6} {'verified':>8} "
          f"{'s':>5}")
    for r in rows:
        print(f"{r['example']:<14} {r['stop']:<14} {r['reason']:<16} {r['rounds']:>6} "
              f"{'yes' if r['edit_tried'] else 'no':>5} {r['nudged']:>6} {'yes' if r['verified'] else 'no':>8} "
              f"{r['seconds']:>5}")
    gave_up_early = sum(1 for r in rows if r["reason"] == "gave_up" and not r["edit_tried"])
    print(f"verified {sum(r['verified'] for r in rows)}/{len(rows)}; edits tried {sum(r['edit_tried'] for r in rows)}"
          f"/{len(rows)}; gave up before any edit {gave_up_early}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default="local")
    ap.add_argument("--api-key", default="unused-local")
    ap.add_argument("--max-rounds", type=int, default=12)
    ap.add_argument("--context-tokens", type=int, default=9_000)
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--timeout", type=float, default=600.0, help="wall-clock seconds of one agent run")
    ap.add_argument("--keep", type=Path, help="copy every run's trace into this directory")
    ap.add_argument("names", nargs="*", help="only these examples")
    args = ap.parse_args()
    model = ModelConfig(model=args.model, base_url=args.base_url, api_key=args.api_key, max_tokens=args.max_tokens,
                        idle_timeout_s=300.0, max_retries=1)
    limits = Limits(max_rounds=args.max_rounds, context_tokens=args.context_tokens, timeout_s=args.timeout)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-local-agent-") as tmp:
        for name, src, traceback, test in examples():
            if args.names and name not in args.names:
                continue
            repo = as_repo(src, Path(tmp) / name)
            spec = JobSpec(repo=str(repo), traceback=traceback, test_command=test, model=model, engine="agent",
                           limits=limits, sandbox=SandboxConfig(), trace_dir=Path(tmp) / "runs")
            started = time.monotonic()
            result = run_job(spec)
            rows.append(row(name, result, time.monotonic() - started))
            if args.keep and result.trace:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(result.trace, args.keep / f"{name}.jsonl")
            r = rows[-1]
            print(f"{name}: {r['reason']} (stop {r['stop']}, {r['rounds']} rounds, edit tried {r['edit_tried']})",
                  flush=True)
    show(rows)


if __name__ == "__main__":
    main()
