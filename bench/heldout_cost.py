"""What the held-out judge adds to verification: the same diff verified with and without it, interleaved.

For each bundled example named (default: shop and four of examples/offline), the offline engine's verified
diff, then `verify_patch` N times each way in this process (without: check.py gets no HeldOut, so the judge box
is opened and used by the second judge alone). Printed per example, medians: verification time with and
without, the pytest runs it contains, and the judge's own time after pytest (`duration_s`, in series) and beside
it (`alongside_s`, while pytest verifies in another box).

    PATCHER_SANDBOX_IMAGE=patcher-sandbox:i34in .venv/bin/python -m bench.heldout_cost [N [EXAMPLE ...]]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import patcher.verify.check as check
from bench.offline import as_repo, examples
from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job, verify_patch

DEFAULT = ["shop", "bounds_guard", "dict_get", "empty_guard", "swap_args"]


def _once(repo: Path, diff: str, traceback: str, test: str | None, cfg: SandboxConfig, runs: Path,
          with_judge: bool) -> dict[str, Any]:
    held = check.HeldOut
    check.HeldOut = held if with_judge else (lambda *args: None)  # type: ignore[assignment,misc]
    try:
        result = verify_patch(str(repo), diff, traceback=traceback, sandbox=cfg, trace_dir=runs, test_command=test)
    finally:
        check.HeldOut = held  # type: ignore[misc]
    events = [json.loads(line) for line in Path(result.trace or "").read_text().splitlines()]
    pytest_ms = sum(e.get("duration_ms") or 0 for e in events if e["type"] == "verify" and e.get("phase") == "verify")
    judge = (result.verification.get("judges") or {}).get("held_out") or {}
    return {"verify_s": result.verification["duration_s"], "pytest_s": pytest_ms / 1000, "status": result.status,
            "after_s": judge.get("duration_s", 0.0), "alongside_s": judge.get("alongside_s", 0.0)}


def main(n: int, names: list[str]) -> None:
    cfg = SandboxConfig(image=os.environ.get("PATCHER_SANDBOX_IMAGE") or SandboxConfig().image)
    with tempfile.TemporaryDirectory(prefix="bench-heldout-") as tmp:
        for name, src, traceback, test in examples():
            if name not in names:
                continue
            repo = as_repo(src, Path(tmp) / name)
            fixed = run_job(JobSpec(repo=str(repo), traceback=traceback, test_command=test, engine="offline",
                                    sandbox=cfg, trace_dir=Path(tmp) / "runs"))
            if fixed.diff is None:
                print(f"{name}: the offline engine found no verified diff ({fixed.reason})")
                continue
            rows: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
            for _ in range(n):
                for with_judge in (False, True):
                    rows[with_judge].append(_once(repo, fixed.diff, traceback, test, cfg, Path(tmp) / "runs",
                                                  with_judge))
            on, off = rows[True], rows[False]

            def med(rows: list[dict[str, Any]], key: str) -> float:
                return round(statistics.median(r[key] for r in rows), 2)

            print(f"{name:14} verify {med(on, 'verify_s'):6.2f} s with, {med(off, 'verify_s'):6.2f} s without; "
                  f"pytest runs {med(on, 'pytest_s'):5.2f} / {med(off, 'pytest_s'):5.2f} s; judge after pytest "
                  f"{med(on, 'after_s'):4.2f} s, beside it {med(on, 'alongside_s'):4.2f} s; "
                  f"{sorted({r['status'] for r in on + off})}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, sys.argv[2:] or DEFAULT)
