"""Time per candidate check, cold vs warm, on real PyPI libraries with an injected bug, in one real box.

Cold is how the offline engine checked candidates before issue 28: `run_tests` (a fresh interpreter,
pytest start-up, the evidence harness, collection, the JUnit report read back). Warm forks the test
process from the box's warm parent, which has pytest and the library's dependencies imported but not
the library (sandbox/forks.py). The same candidates (the engine's first ones for the bug's traceback)
are checked both ways, alternating, so the machine's load falls on both alike; both must agree on
every candidate's outcome. Prints per library: median ms per check cold and warm, checks per second,
the ratio, and the agreement.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.checks [--lib more_itertools] [--candidates 8]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import tempfile
import time
from pathlib import Path

from bench.injected import BUGS, LIBS, fetch, inject, pytest
from patcher.config import SandboxConfig
from patcher.intake import parse_traceback, stage_repo
from patcher.repair import Checker, candidates
from patcher.sandbox import DockerSandbox
from sandbox.protocol import WriteFileRequest


def measure(lib: str, image: str, count: int, tmp: Path) -> dict[str, object]:
    bug = next(b for b in BUGS if b.lib == lib and (b.test or lib != "tabulate"))
    pristine = fetch(LIBS[lib], tmp / lib)
    repo = inject(pristine, bug, tmp / f"{lib}-repo")
    assert repo is not None
    test = bug.test or parse_traceback(pytest(repo).stdout).failing_tests[0]
    traceback = pytest(repo, test).stdout
    command = f"python -m pytest -q {shlex.quote(test)}"
    staged = stage_repo(str(repo))
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    agree = 0
    try:
        found = list(candidates(parse_traceback(traceback), staged.path, count))
        with DockerSandbox(staged, SandboxConfig(image=image, test_timeout_s=300)) as box:
            cold, warm = Checker(box, warm=False), Checker(box, warm=True)
            warm.run(command, "warm-up", 120)  # the parent's imports, once per box (counted apart)
            for n, c in enumerate(found):
                original = (staged.path / c.path).read_text()
                box.call(WriteFileRequest(path=c.path, content=c.new_text))
                outcomes = []
                for name, checker in sorted({"cold": cold, "warm": warm}.items(), reverse=n % 2 == 1):
                    at = time.perf_counter()
                    outcomes.append(checker.run(command, f"check-{n}", 120).ok)
                    times[name].append(time.perf_counter() - at)
                agree += outcomes[0] == outcomes[1]
                box.call(WriteFileRequest(path=c.path, content=original))
            assert warm.cold_runs == 0, "a warm check fell back to a cold run"
    finally:
        staged.cleanup()
    cold_ms, warm_ms = (1000 * statistics.median(times[k]) for k in ("cold", "warm"))
    return {"lib": lib, "checks": len(times["cold"]), "cold_ms": round(cold_ms), "warm_ms": round(warm_ms),
            "cold_per_s": round(1000 / cold_ms, 2), "warm_per_s": round(1000 / warm_ms, 2),
            "ratio": round(cold_ms / warm_ms, 2), "agree": f"{agree}/{len(times['cold'])}"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append", help="library (repeatable); default: more_itertools, tabulate")
    ap.add_argument("--candidates", type=int, default=8)
    args = ap.parse_args()
    image = os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest"
    with tempfile.TemporaryDirectory(prefix="bench-checks-") as tmp:
        for lib in args.lib or ["more_itertools", "tabulate"]:
            row = measure(lib, image, args.candidates, Path(tmp))
            print(f"{row['lib']:<16} {row['checks']} checks: cold {row['cold_ms']} ms ({row['cold_per_s']}/s), "
                  f"warm {row['warm_ms']} ms ({row['warm_per_s']}/s): {row['ratio']}x; outcomes agree "
                  f"{row['agree']}", flush=True)


if __name__ == "__main__":
    main()
