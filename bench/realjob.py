"""Whole-job time on a real third-party library against its bare test runs, with the breakdown.

The library's sdist is fetched from PyPI at benchmark time (never committed), made a git repository,
and given a one-line bug; pytest on the host produces the traceback a user would paste. A scripted model
with no latency makes the right edit at once, so what is measured is patcher's own cost around the
test runs. The job runs twice (cold: the environment image may be built; warm: it is reused).

Goal (issue 16): warm job <= 2 x (one base suite run + one patched suite run) + 3 s.

    .venv/bin/python -m bench.realjob [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from patcher.pipeline import JobSpec, run_job
from patcher.result import JobResult
from patcher.testing import ScriptedModelServer, reply
from patcher.trace import read_events

LIBRARY, VERSION = "more-itertools", "10.5.0"
SOURCE = "more_itertools/more.py"
GOOD = "            return iterable[-1]\n"
BAD = "            return iterable[len(iterable)]\n"
FAILING = "tests/test_more.py::LastTests::test_basic"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "PATH": "/usr/bin:/bin"}


def fetch(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"{LIBRARY}=={VERSION}", "-d", str(into)], check=True, capture_output=True, timeout=300)
    [archive] = into.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    [tree] = [p for p in into.iterdir() if p.is_dir()]
    return tree


def buggy_repo(tree: Path) -> Path:
    source = tree / SOURCE
    text = source.read_text()
    assert text.count(GOOD) == 1, "the bug site moved in this version"
    source.write_text(text.replace(GOOD, BAD))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "buggy"]):
        subprocess.run(["git", *args], cwd=tree, env=GIT_ENV, check=True, capture_output=True)
    return tree


def user_traceback(tree: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", FAILING],
                         cwd=tree, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout[-2000:]
    return out.stdout


def job(tree: Path, traceback: str, runs: Path) -> tuple[JobResult, float]:
    fix = ("edit_file", {"path": SOURCE, "old_text": BAD.strip(), "new_text": GOOD.strip()})
    with ScriptedModelServer([reply(None, [fix]), reply("Fixed the index.")]) as server:
        spec = JobSpec(repo=str(tree), traceback=traceback, model=server.model_config(), engine="agent",
                       trace_dir=runs)
        started = time.monotonic()
        result = run_job(spec)
    return result, time.monotonic() - started


def breakdown(trace: Path) -> dict[str, float]:
    """Seconds per phase, from the trace's event times; and the suite runs' own durations."""
    events = list(read_events(trace))
    at = {e["type"]: e["ts"] for e in reversed(events)}  # first time each type appears
    baseline = [e for e in events if e["type"] == "verify" and e.get("phase") == "baseline"]
    verify = [e for e in events if e["type"] == "verify" and e.get("phase") == "verify"]
    engine = [e for e in events if e["type"] in ("model_call", "tool_call")]
    ready = at.get("environment", at.get("settings", at["run_start"]))
    out = {"staging": at.get("settings", at["run_start"]) - at["run_start"],
           "environment": ready - at.get("settings", at["run_start"]),
           "baseline": baseline[-1]["ts"] - ready if baseline else 0.0,
           "engine": engine[-1]["ts"] - baseline[-1]["ts"] if engine and baseline else 0.0,
           "verification": events[-1]["ts"] - (engine[-1]["ts"] if engine else at["run_start"]),
           "total": events[-1]["ts"] - at["run_start"]}
    suites = {e["step"]: e["duration_ms"] / 1000 for e in baseline + verify if e.get("step") in ("base-suite", "suite")}
    out["base_suite_run"] = suites.get("base-suite", 0.0)
    out["patched_suite_run"] = suites.get("suite", 0.0)
    runs = [e for e in baseline + verify if not e.get("answered_by")]  # an answered run did not run again
    out["test_runs_total"] = sum(e["duration_ms"] for e in runs) / 1000
    out["test_runs"] = len(runs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="Work here instead of a temporary directory.")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="patcher-bench-real-"))
    work.mkdir(parents=True, exist_ok=True)
    tree = buggy_repo(fetch(work / "src"))
    traceback = user_traceback(tree)
    print(f"{LIBRARY} {VERSION}: bug in {SOURCE} (last()), failing {FAILING}; work in {work}")
    rows = []
    for label in ("cold", "warm"):
        result, wall = job(tree, traceback, work / "runs")
        assert result.trace is not None
        phases = breakdown(Path(result.trace))
        rows.append((label, result, wall, phases))
        print(f"{label}: {result.status} ({result.reason}) in {wall:.1f} s; "
              + ", ".join(f"{k} {v}" if k == "test_runs" else f"{k} {v:.2f} s" for k, v in phases.items()))
    _, warm, warm_s, phases = rows[-1]
    budget = 2 * (phases["base_suite_run"] + phases["patched_suite_run"]) + 3
    print(f"goal: warm job {warm_s:.1f} s <= 2 x ({phases['base_suite_run']:.2f} + "
          f"{phases['patched_suite_run']:.2f}) + 3 = {budget:.1f} s: {'met' if warm_s <= budget else 'MISSED'} "
          f"(ratio of job to its test runs: {warm_s / max(phases['test_runs_total'], 1e-9):.2f})")
    print(json.dumps({"library": f"{LIBRARY}=={VERSION}", "warm_s": round(warm_s, 2), "budget_s": round(budget, 2),
                      "phases": {k: round(v, 3) for k, v in phases.items()}, "verified": warm.status == "verified"}))
    return 0 if warm.status == "verified" else 1


if __name__ == "__main__":
    raise SystemExit(main())
