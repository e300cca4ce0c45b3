"""What verification costs on top of the tests it runs, and a whole `patcher fix` vs its test time.

On the bundled example (examples/shop), measured in one run:
  direct   `docker run` of the sandbox image with the fixed repo mounted read-only, running the
           reproduction and then the suite (the same two commands verification runs), to exit;
  verify   verify() on the same diff: policy, host git apply, a fresh hardened box, both runs with
           JUnit reports read back, reruns if any;
  fix      run_job() end to end with a scripted model on loopback (intake, baseline, agent, verify).
Overhead = verify - direct (target <= 1.0 s), and verify()'s time beyond the test runs it makes (box start,
policy, git apply; target <= 0.5 s). Medians of N runs.

    .venv/bin/python -m bench.verify [N]     (as a module: bench/sandbox.py would shadow the sandbox package)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patcher.config import SandboxConfig
from patcher.intake import stage_repo
from patcher.pipeline import JobSpec, run_job
from patcher.sandbox import BoxPool, DockerSandbox, docker_client
from patcher.testing import ScriptedModelServer, reply
from patcher.verify import Job, apply_diff, run_baseline, verify

ROOT = Path(__file__).resolve().parents[1]
REPRO = "python -m pytest -q tests/test_pagination.py"
SUITE = "python -m pytest -q"
BUG, FIXED = "min(end, len(items) + 1)", "min(end, len(items))"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def example_repo(where: Path) -> Path:
    repo = where / "shop"
    shutil.copytree(ROOT / "examples/shop", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "shop"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True)
    return repo


def fix_diff(repo: Path) -> str:
    path = repo / "shop/pagination.py"
    original = path.read_text()
    path.write_text(original.replace(BUG, FIXED))
    diff = subprocess.run([*GIT, "diff"], cwd=repo, check=True, capture_output=True, text=True).stdout
    path.write_text(original)
    return diff


def median_s(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(n: int = 5) -> None:
    cfg = SandboxConfig()
    client = docker_client()

    pool = BoxPool(client)  # as in a job: the next box is started while this one works
    pool.warm(cfg)

    def open_box(tree):  # type: ignore[no-untyped-def]
        return DockerSandbox(tree, cfg, client, pool)

    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        repo = example_repo(Path(tmp))
        diff = fix_diff(repo)
        staged = stage_repo(str(repo))
        fixed, _ = apply_diff(staged, diff)
        script = f"{REPRO} -p no:cacheprovider; {SUITE} -p no:cacheprovider"
        docker_run = ["docker", "run", "--rm", "--network", "none", "--user", str(cfg.uid), "-e", "HOME=/tmp",
                      "-e", "PYTHONDONTWRITEBYTECODE=1", "-v", f"{fixed.path}:/w:ro", "-w", "/w", cfg.image,
                      "sh", "-c", script]
        direct = median_s(lambda: subprocess.run(docker_run, check=True, capture_output=True), n)
        job = Job(staged, open_box, SUITE, REPRO, "IndexError")
        base = run_baseline(job)
        assert base.reproduced, base
        own: list[float] = []  # verify()'s time outside its own test runs, per call

        def one() -> None:
            ver = verify(job.with_baseline(base), diff)
            _verified(ver)
            own.append(ver.duration_s - sum(run.duration_ms for _, run in ver.runs) / 1000)

        checked = median_s(one, n)
        fixed.cleanup()
        staged.cleanup()
        traceback = (ROOT / "examples/shop.traceback.txt").read_text()
        edit = ("edit_file", {"path": "shop/pagination.py", "old_text": BUG, "new_text": FIXED})

        def whole_fix() -> None:
            with ScriptedModelServer([reply(None, [edit]), reply("Fixed the upper bound.")]) as server:
                spec = JobSpec(repo=str(repo), traceback=traceback, test_command=REPRO, model=server.model_config(),
                               sandbox=cfg, trace_dir=Path(tmp) / "runs")
                result = run_job(spec)
            assert result.status == "verified", result.message

        whole = median_s(whole_fix, n)
    pool.close()
    print(f"direct docker run of repro + suite: {direct:.2f} s   verify(): {checked:.2f} s   (median of {n})")
    overhead = checked - direct
    print(f"verification overhead: {overhead:+.2f} s (target <= 1.0 s: {'PASS' if overhead <= 1.0 else 'MISS'})")
    beyond = statistics.median(own)
    print(f"verify() beyond its own test runs: {beyond:+.2f} s (issue 16 target <= 0.5 s: "
          f"{'PASS' if beyond <= 0.5 else 'MISS'})")
    print(f"whole patcher fix with a scripted model: {whole:.2f} s = {whole / direct:.1f}x the direct test time")


def _verified(ver: object) -> None:
    assert getattr(ver, "status", None) == "verified", getattr(ver, "message", ver)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
