"""How the upstream bench reads a result: whether the baseline was reached, and whether an engine's diff is the
upstream fix (the same code, file by file, by bench.injected's AST comparison)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.injected import same_code
from bench.upstream_build import Built
from patcher.result import JobResult
from patcher.trace import read_events


def baseline_reached(result: JobResult) -> bool:
    """True when the job got past its baseline (the reproduction failed as reported and the suite ran): the
    trace then has verification's final event; a job ended by its baseline (not_reproduced, an unusable suite,
    a failed setup) has none."""
    if not result.trace or not Path(result.trace).exists():
        return False
    return any(e["type"] == "verify" and e.get("phase") == "final" for e in read_events(Path(result.trace)))


def _files_changed(diff: str) -> set[str]:
    return {line[6:] for line in diff.splitlines() if line.startswith("+++ b/")} | {
        line[6:] for line in diff.splitlines() if line.startswith("--- a/")}


def offline_matches(built: Built, diff: str) -> bool:
    """Whether `diff` makes every file either diff touches the same code as the upstream fix makes it."""
    with tempfile.TemporaryDirectory(prefix="bench-upstream-same-") as tmp:
        trees = {}
        for name, patch in (("upstream", built.diff), ("engine", diff)):
            tree = Path(tmp) / name
            shutil.copytree(built.repo, tree, ignore=shutil.ignore_patterns(".git"))
            subprocess.run(["git", "apply"], cwd=tree, input=patch, text=True, check=True, capture_output=True)
            trees[name] = tree
        for rel in _files_changed(built.diff) | _files_changed(diff):
            up, eng = trees["upstream"] / rel, trees["engine"] / rel
            if up.exists() != eng.exists():
                return False
            if up.exists() and not same_code(eng.read_text(), up.read_text()):
                return False
    return True
