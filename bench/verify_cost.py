"""What verification costs: `patcher verify` time on the bundled examples, before vs after.

BEFORE is main before the second judge and the perturbed reproductions (issue 22).

"Before" is the code at BEFORE (checked out with `git worktree add` into a temp dir, with its own sandbox
image tag); "after" is this checkout. Each example's fix comes from the offline engine (this checkout;
shop's is bench/verify.py's), then both versions verify the same diff, interleaved, in child processes.
Printed per example and in total: verify() time (`verification.duration_s`) and the whole `patcher
verify` (baseline included), with the ratio after/before.

    PATCHER_SANDBOX_IMAGE=patcher-sandbox:i13 .venv/bin/python -m bench.verify_cost [N [EXAMPLE,...]]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "783100d"
TESTS = {"shop": "python -m pytest -q tests/test_pagination.py"}
"""--test for examples whose traceback names no test (shop's is a production traceback)."""
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
CHILD = """
import json, sys, time
from patcher.config import SandboxConfig
from patcher.pipeline import verify_patch
repo, diff_file, tb_file, image, runs, test = sys.argv[1:7]
started = time.perf_counter()
r = verify_patch(repo, open(diff_file).read(), traceback=open(tb_file).read(), sandbox=SandboxConfig(image=image),
                 trace_dir=__import__("pathlib").Path(runs), test_command=test or None)
print(json.dumps({"status": r.status, "reason": r.reason, "verify_s": r.verification["duration_s"],
                  "wall_s": time.perf_counter() - started}))
"""


def examples() -> list[tuple[str, Path, Path]]:
    offline = sorted(p for p in (ROOT / "examples/offline").iterdir()
                     if (p / "traceback.txt").exists() and p.name != "no_template")
    return [(p.name, p, p / "traceback.txt") for p in offline] + [
        ("shop", ROOT / "examples/shop", ROOT / "examples/shop.traceback.txt")]


def git_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("traceback.txt", "__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True)
    return dest


def fix_of(repo: Path, traceback: Path, image: str, runs: Path) -> str | None:
    from patcher.config import SandboxConfig
    from patcher.pipeline import JobSpec, run_job
    result = run_job(JobSpec(repo=str(repo), traceback=traceback.read_text(), engine="offline",
                             sandbox=SandboxConfig(image=image), trace_dir=runs))
    return result.diff


def shop_fix(repo: Path) -> str:
    """examples/shop has no template fix: the one-line bound fix bench/verify.py uses."""
    from bench.verify import fix_diff
    return fix_diff(repo)


def child(code_root: Path, image: str, repo: Path, diff: Path, tb: Path, runs: Path, test: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code_root), "PATCHER_SANDBOX_IMAGE": image}
    for attempt in (1, 2):  # the daemon is shared: a container another job removes mid-list can fail a run
        out = subprocess.run([sys.executable, "-c", CHILD, str(repo), str(diff), str(tb), image, str(runs), test],
                             cwd=code_root, env=env, capture_output=True, text=True)
        if out.returncode == 0:
            break
        print(f"  ({code_root.name} run {attempt} failed: {out.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
    out.check_returncode()
    return json.loads(out.stdout.strip().splitlines()[-1])


def build_old_image(old: Path, tag: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(old), "PATCHER_SANDBOX_IMAGE": tag}
    subprocess.run([sys.executable, "-c", "from patcher.env.image import build_image; build_image(None, log=print)"],
                   cwd=old, env=env, check=True, capture_output=True)


def main(n: int = 1, only: set[str] | None = None) -> None:
    new_image = os.environ.get("PATCHER_SANDBOX_IMAGE", "patcher-sandbox:latest")
    old_image = new_image + "-before"
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        where = Path(tmp)
        old = where / "before"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(old), BEFORE], cwd=ROOT, check=True)
        try:
            build_old_image(old, old_image)
            totals = {"before": [0.0, 0.0], "after": [0.0, 0.0]}
            print(f"{'example':16} {'verify() before':>16} {'after':>8} {'whole before':>13} {'after':>8}")
            for name, src, tb in examples():
                if only and name not in only:
                    continue
                repo = git_repo(src, where / name)
                diff = shop_fix(repo) if name == "shop" else fix_of(repo, tb, new_image, where / "runs")
                if not diff:
                    print(f"{name:16} (the offline engine found no fix; skipped)")
                    continue
                (where / f"{name}.diff").write_text(diff)
                got: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
                for _ in range(n):
                    for label, code, image in (("before", old, old_image), ("after", ROOT, new_image)):
                        got[label].append(child(code, image, repo, where / f"{name}.diff", tb, where / "runs",
                                                TESTS.get(name, "")))
                row = []
                for label in ("before", "after"):
                    assert all(r["status"] == "verified" for r in got[label]), (name, label, got[label])
                    v = sum(float(r["verify_s"]) for r in got[label]) / n  # type: ignore[arg-type]
                    w = sum(float(r["wall_s"]) for r in got[label]) / n  # type: ignore[arg-type]
                    totals[label][0] += v
                    totals[label][1] += w
                    row += [v, w]
                print(f"{name:16} {row[0]:15.2f}s {row[2]:7.2f}s {row[1]:12.2f}s {row[3]:7.2f}s")
            (bv, bw), (av, aw) = totals["before"], totals["after"]
            print(f"{'total':16} {bv:15.2f}s {av:7.2f}s {bw:12.2f}s {aw:7.2f}s")
            print(f"ratio after/before: verify() {av / bv:.2f}x, whole `patcher verify` {aw / bw:.2f}x "
                  f"(mean of {n} run(s) each, interleaved)")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None)
