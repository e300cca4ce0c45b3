"""What verification costs over the pytest runs it contains, on the bundled examples with their known fixes
(bench/honest.py), one run each: issue 34's budget is whole verification at most 2x its pytest runs.

Per example, from the run's trace and result: `whole` is `patcher verify` end to end (staging, baseline, every
box, the judges; wall clock); `pytest` the test runs it contains (baseline and verification runs as the trace's
`verify` events list them, each timed on the host around its box call; a run answered by another is not counted
twice); `verify()` the verification alone (`verification.duration_s`) over its own runs; `judges` every
`verification.judges` entry's `duration_s` (each judge's own time). Ratios are of the sums.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.judge_cost [EXAMPLE,...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.honest import example_diffs
from patcher.config import SandboxConfig
from patcher.pipeline import verify_patch

COLUMNS = ("whole", "pytest", "verify()", "its runs", "judges")


def _runs_ms(trace: Path) -> dict[str, float]:
    """Milliseconds of the pytest runs the trace lists, by phase (baseline, verify)."""
    out = {"baseline": 0.0, "verify": 0.0}
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "verify" and event.get("step") and not event.get("answered_by"):
            out[event["phase"]] = out.get(event["phase"], 0.0) + float(event.get("duration_ms") or 0.0)
    return out


def _judges_s(verification: dict[str, Any]) -> float:
    return sum(float(j.get("duration_s") or 0.0) for j in (verification.get("judges") or {}).values())


def measure(tmp: Path, cfg: SandboxConfig, only: set[str] | None = None) -> list[tuple[str, str, list[float]]]:
    """(example, reason, [whole, pytest, verify(), its runs, judges] in seconds) per example."""
    rows: list[tuple[str, str, list[float]]] = []
    for name, repo, diff, traceback, test in example_diffs(tmp):
        if only and name not in only:
            continue
        started = time.perf_counter()
        result = verify_patch(str(repo), diff, test_command=test, traceback=traceback, sandbox=cfg,
                              trace_dir=tmp / f"runs-{name}")
        whole = time.perf_counter() - started
        runs = _runs_ms(Path(result.trace)) if result.trace else {}
        ver = result.verification
        rows.append((name, result.reason, [whole, sum(runs.values()) / 1000, float(ver.get("duration_s") or 0.0),
                                           runs.get("verify", 0.0) / 1000, _judges_s(ver)]))
        print(f"  cost {name}: {result.reason} in {whole:.1f} s", flush=True)
    return rows


def report(rows: list[tuple[str, str, list[float]]]) -> None:
    print(f"{'example':18}" + "".join(f"{c:>10}" for c in COLUMNS) + "   whole/pytest  verify()/runs")
    totals = [0.0] * len(COLUMNS)
    for name, reason, cols in rows:
        totals = [t + c for t, c in zip(totals, cols, strict=True)]
        mark = "" if reason == "verified" else f"  ({reason})"
        print(f"{name:18}" + "".join(f"{c:9.1f}s" for c in cols)
              + f"   {_ratio(cols[0], cols[1]):>12}  {_ratio(cols[2], cols[3]):>13}{mark}")
    print(f"{'total':18}" + "".join(f"{c:9.1f}s" for c in totals)
          + f"   {_ratio(totals[0], totals[1]):>12}  {_ratio(totals[2], totals[3]):>13}")
    print(f"whole verification / its pytest runs: {_ratio(totals[0], totals[1])} (issue 34's budget: 2x); "
          f"the judges: {totals[4]:.1f} s of {totals[0]:.1f} s")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def main() -> None:
    only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
    cfg = SandboxConfig(image=os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest")
    with tempfile.TemporaryDirectory(prefix="bench-judge-cost-") as tmp:
        report(measure(Path(tmp), cfg, only))


if __name__ == "__main__":
    main()
