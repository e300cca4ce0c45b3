"""The second judge's box side (sandbox/judging.py and sandbox/judge/), run on this machine in a child process:
real keeper, child and observers, with this interpreter as `python` (its pytest is the one the dressed run
finds). The child process is the one whose descendants the judge's sweep kills, never the test session's.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_RUN = ("import json, sys, time\nfrom sandbox import judging\n"
        "r = judging.judge(sys.stdin.read(), sys.argv[1], 'group', time.monotonic() + 90)\n"
        "print(json.dumps({'data': dict(r.data), 'output': r.output}))\n")


def judge(repo: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """{"contexts": {name: {"records": [...], "problem": ..., "ended": bool}}, "output": ...} for `spec` on `repo`
    ("ended": the run's end record came; without it the host refuses the run as tampered with, twice.py)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run([sys.executable, "-c", _RUN, str(repo)], input=json.dumps(spec), env=env, cwd=repo,
                         capture_output=True, text=True, timeout=180, check=True)
    got = json.loads(run.stdout.strip().splitlines()[-1])
    contexts = {name: {"records": [r for r in (d.get("evidence") or {}).get("records") or [] if r.get("k") != "end"],
                       "problem": (d.get("evidence") or {}).get("problem"),
                       "ended": any(r.get("k") == "end" for r in (d.get("evidence") or {}).get("records") or [])}
                for name, d in (got["data"].get("contexts") or {}).items()}
    return {"contexts": contexts, "output": got["output"]}


def both_trees(node: str, base: dict[str, str], added: dict[str, list[int]], tests: list[str],
               required: list[int]) -> dict[str, Any]:
    """A job for one test on the base (`base`: the files put back) and the patched tree, in both contexts, the
    patched tree's `added` lines watched."""
    cases = [{"id": f"{t}:t0", "tree": t, "test": node, "group": t, "contexts": ["bare", "dressed"],
              "required": required} for t in ("base", "patched")]
    restore = {rel: base64.b64encode(text.encode()).decode() for rel, text in base.items()}
    every = {rel: list(range(1, text.count("\n") + 2)) for rel, text in base.items()}
    return {"cases": cases, "restore": restore, "patched": True, "contexts": ["bare", "dressed"],
            "observe": {"base": {"lines": every, "tests": tests}, "patched": {"lines": added, "tests": tests}}}


def outcomes(got: dict[str, Any], case: str = "patched:t0") -> dict[str, str | None]:
    """The case's outcome per context (None: no record)."""
    return {name: next((r.get("outcome") for r in c["records"] if r.get("k") == "test" and r.get("id") == case), None)
            for name, c in got["contexts"].items()}


def observed(got: dict[str, Any], context: str = "dressed") -> list[tuple[str, bool]]:
    """(kind, refuses) of what the observers reported in a context."""
    return [(str(r.get("kind")), bool(r.get("refuses"))) for r in got["contexts"][context]["records"]
            if r.get("k") == "obs"]
