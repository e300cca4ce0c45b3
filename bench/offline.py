"""The offline engine on the bundled examples: candidates checked per second and time to a verified fix.

For each example under examples/offline (and examples/shop), one `run_job` with engine=offline on real
Docker: candidates generated per second (host only), candidates checked per second in the box
(reproduction, then the suite when it passes), and the wall time of the whole job to `verified`.

    .venv/bin/python -m bench.offline      (as a module: bench/sandbox.py would shadow the sandbox package)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from patcher.config import SandboxConfig
from patcher.intake import parse_traceback, stage_repo
from patcher.pipeline import JobSpec, run_job
from patcher.repair import Stats, candidates

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def examples() -> list[tuple[str, Path, str, str | None]]:
    out = [(p.name, p, (p / "traceback.txt").read_text(), None)
           for p in sorted((ROOT / "examples/offline").iterdir()) if (p / "traceback.txt").exists()]
    out.append(("shop", ROOT / "examples/shop", (ROOT / "examples/shop.traceback.txt").read_text(),
                "python -m pytest -q tests/test_pagination.py"))
    return out


def as_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("traceback.txt", "__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True)
    return dest


def generation_rate(repo: Path, traceback: str) -> tuple[int, float]:
    staged = stage_repo(str(repo))
    try:
        stats = Stats()
        started = time.perf_counter()
        for _ in range(20):
            stats = Stats()
            list(candidates(parse_traceback(traceback), staged.path, 200, stats))
        return stats.generated, (time.perf_counter() - started) / 20
    finally:
        staged.cleanup()


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        for name, src, traceback, test in examples():
            repo = as_repo(src, Path(tmp) / name)
            generated, gen_s = generation_rate(repo, traceback)
            started = time.perf_counter()
            result = run_job(JobSpec(repo=str(repo), traceback=traceback, test_command=test, engine="offline",
                                     sandbox=SandboxConfig(), trace_dir=Path(tmp) / "runs"))
            wall = time.perf_counter() - started
            events = [json.loads(line) for line in Path(result.trace or "").read_text().splitlines()]
            search = next(e for e in events if e["type"] == "offline")
            rows.append((name, result.status, generated, generated / gen_s if gen_s else 0.0, search["tried"],
                         search["tried"] / search["seconds"] if search["seconds"] else 0.0, wall))
            print(json.dumps({"example": name, "status": result.status, "reason": result.reason,
                              "stopped": search.get("stopped"), "tried": search["tried"],
                              "message": result.message}), flush=True)
    print(f"{'example':<16}{'status':<14}{'generated':>10}{'gen/s':>10}{'tried':>7}{'checked/s':>11}{'job s':>8}")
    for name, status, generated, gen_rate, tried, rate, wall in rows:
        print(f"{name:<16}{status:<14}{generated:>10}{gen_rate:>10.0f}{tried:>7}{rate:>11.2f}{wall:>8.2f}")
    verified = [r for r in rows if r[1] == "verified"]
    total_tried = sum(r[4] for r in rows)
    print(f"verified {len(verified)}/{len(rows)}; median time to a verified fix "
          f"{sorted(r[6] for r in verified)[len(verified) // 2]:.2f} s; {total_tried} candidates checked in the box")


if __name__ == "__main__":
    main()
