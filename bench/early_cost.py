"""What making the base's half of the judges' run while pytest verifies saves: the same upstream cases verified
both ways, interleaved, in this process, on one image (judges/box.py; "late" is the judges' run made whole after
pytest, as before: JudgeBox's base half turned off).

Per case and in total: verify() time (`verification.duration_s`) over its own pytest runs, and baseline plus
verify() over all their pytest runs, early and late; the context judge's time after pytest and beside it.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.early_cost --case ID [--case ID …]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.judge_cost import _runs_ms
from bench.upstream import interpreter, python_setting
from bench.upstream_build import build
from bench.upstream_cases import Case, load
from bench.upstream_check import base_traceback
from patcher.config import SandboxConfig
from patcher.pipeline import verify_patch
from patcher.verify.judges.box import JudgeBox

MODES = ("early", "late")


def once(case: Case, work: Path, cfg: SandboxConfig, early: bool) -> tuple[float, float, float, float, float, str]:
    """(verify(), its pytest runs, baseline and verify() pytest runs, context after pytest, context beside, the
    verdict's reason)."""
    setting, host = python_setting(case, cfg), interpreter(case, {}, cfg.image)
    if setting is None or host is None:
        raise SystemExit(f"{case.id}: no Python {case.python} here (bench.upstream says how to get one)")
    keyword, cfg = setting
    built = build(case, work)
    traceback = base_traceback(case, built, host)
    half = JudgeBox._base_half
    if not early:
        JudgeBox._base_half = lambda *args: None  # type: ignore[method-assign]
    try:
        result = verify_patch(str(built.repo), built.diff, traceback=traceback, sandbox=cfg, trace_dir=work / "runs",
                              test_command=case.test_command, suite_command=case.suite, setup=case.setup,
                              **keyword)  # type: ignore[arg-type]
    finally:
        JudgeBox._base_half = half  # type: ignore[method-assign]
    runs = _runs_ms(Path(result.trace)) if result.trace else {}
    context = (result.verification.get("judges") or {}).get("context") or {}
    return (float(result.verification.get("duration_s") or 0.0), runs.get("verify", 0.0) / 1000,
            sum(runs.values()) / 1000, float(context.get("duration_s") or 0.0),
            float(context.get("alongside_s") or 0.0), result.reason)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", required=True)
    args = ap.parse_args()
    cfg = SandboxConfig(image=os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest", test_timeout_s=300)
    cases = [c for c in load() if c.id in args.case]
    total = {m: [0.0] * 5 for m in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-early-") as tmp:
        for n, case in enumerate(cases):
            for k, mode in enumerate(MODES if n % 2 == 0 else MODES[::-1]):  # interleaved, each mode first in turn
                got = once(case, Path(tmp) / f"{n}-{k}", cfg, mode == "early")
                total[mode] = [a + b for a, b in zip(total[mode], got[:5], strict=True)]
                print(f"  {case.id} {mode:5}: {got[5]}, verify() {got[0]:.1f} s over its runs {got[1]:.1f} s; "
                      f"context after pytest {got[3]:.1f} s, beside {got[4]:.1f} s", flush=True)
    for mode in MODES:
        verify_s, own, runs, context, beside = total[mode]
        ratio = verify_s / max(own, 1e-9)
        print(f"{mode}: verify() {verify_s:.0f} s over its own pytest runs {own:.0f} s = {ratio:.2f}x;"
              f" baseline and verify() over all their pytest runs: {(runs - own + verify_s) / max(runs, 1e-9):.2f}x; "
              f"context after pytest {context:.0f} s, beside {beside:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
