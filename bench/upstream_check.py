"""The host check of one upstream case with plain pytest: the fix's test fails on the base with the case's
exception, and passes with the rebuilt fix.

The tests run in a virtual environment per project and Python (pytest and the case's `deps`), cached beside
the sdists; the repository is put first on the path (its `src/` when it has one), never installed. A case
whose Python is not the host's is checked only when an interpreter for it is given (`--python-bin`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.upstream_build import CACHE, Built
from bench.upstream_cases import Case
from patcher.intake import parse_traceback

HOST_PYTEST = "pytest<8"
"""The host check's pytest, near the sandbox image's (Debian's 7.x), unless a case's `deps` pins its own."""
HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class Checked:
    ok: bool
    why: str
    """One line: what the base and the fixed runs did."""
    traceback: str
    """The base run's output (the traceback a user would paste)."""


def venv(case: Case, python: str) -> Path:
    """A cached virtual environment with pytest and the case's test requirements."""
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    pinned = any(d.split("<")[0].split("=")[0].strip() == "pytest" for d in case.deps)
    deps = sorted({*case.deps, *([] if pinned else [HOST_PYTEST])})
    where = CACHE / "venvs" / f"{case.project}-py{version}-{abs(hash(tuple(deps))) % 10**8}"
    ready = where / ".complete"
    if not ready.exists():
        subprocess.run([python, "-m", "venv", "--clear", str(where)], check=True, capture_output=True)
        subprocess.run([str(where / "bin/python"), "-m", "pip", "install", "-q", *deps], check=True,
                       capture_output=True, timeout=600)
        ready.touch()
    return where / "bin/python"


def run_tests(python: Path, repo: Path, case: Case) -> subprocess.CompletedProcess[str]:
    path = [str(repo / "src")] if (repo / "src").is_dir() else []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "PYTHONPATH": os.pathsep.join([*path, str(repo)])}
    argv = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", *case.tests]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def base_traceback(case: Case, built: Built, python: str = sys.executable) -> str:
    """The fix's test run on the base: the traceback a user would paste."""
    return run_tests(venv(case, python), built.repo, case).stdout


def check(case: Case, built: Built, python: str = sys.executable) -> Checked:
    interpreter = venv(case, python)
    before = run_tests(interpreter, built.repo, case)
    parsed = parse_traceback(before.stdout)
    raised = parsed.exception.type.rsplit(".", 1)[-1] if parsed.exception else None
    if before.returncode != 1 or raised != case.exception:
        return Checked(False, f"the base run exited {before.returncode} raising {raised}, not "
                              f"{case.exception}: {_last(before.stdout)}", before.stdout)
    subprocess.run(["git", "apply"], cwd=built.repo, input=built.diff, text=True, check=True)
    try:
        after = run_tests(interpreter, built.repo, case)
    finally:
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=built.repo, check=True)
    if after.returncode != 0:
        return Checked(False, f"the fixed run exited {after.returncode}: {_last(after.stdout)}", before.stdout)
    return Checked(True, f"base raises {raised}, fixed passes", before.stdout)


def _last(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return (lines[-1] if lines else "(no output)")[:200]
