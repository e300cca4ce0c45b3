"""The host check of one upstream case with plain pytest: the fix's test fails on the base with the case's
exception, and passes with the rebuilt fix.

The tests run in a virtual environment per project and Python (pytest and the case's `deps`), cached beside
the sdists; the repository is put first on the path (its `src/` when it has one), never installed. A case
whose Python is not the host's is checked only when an interpreter for it is given: a host one
(`--python-bin 3.9=PATH`), or an image that has it and pytest (`--python-bin 3.9=docker:IMAGE`; by default that
Python's sandbox image when this machine has built it, `patcher-sandbox:latest-py3.9`): run with no network,
the repository mounted read-only, the image's pytest, and the case's `deps` as binary wheels for that Python
installed on the host into a directory put on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.upstream_build import CACHE, Built
from bench.upstream_cases import Case, unittest_id
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


def wheels(case: Case, image: str) -> Path:
    """The case's `deps` as binary wheels for the image's Python, installed into a cached host directory."""
    version = subprocess.run(["docker", "run", "--rm", "--network", "none", image, "python3", "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    where = CACHE / "targets" / f"{case.project}-py{version}-{'-'.join(sorted(case.deps))}"
    if not (where / ".complete").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(where), "--python-version",
                        version, "--only-binary", ":all:", "--platform", "manylinux2014_x86_64", *case.deps],
                       check=True, capture_output=True, timeout=600)
        (where / ".complete").touch()
    return where


def run_tests(python: str, repo: Path, case: Case) -> subprocess.CompletedProcess[str]:
    """The case's tests run with plain pytest (or unittest, the case's runner) by `python`: a host interpreter
    (in its venv) or `docker:IMAGE`. unittest's report goes to stderr: it is returned as the output."""
    pytest = (["-m", "unittest", *(unittest_id(t) for t in case.tests)] if case.runner == "unittest" else
              ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", *case.tests])
    env = {"PYTHONDONTWRITEBYTECODE": "1"}  # plugins load: a venv holds only pytest and the case's deps
    if python.startswith("docker:"):
        flags = [f"--env={k}={v}" for k, v in env.items()]
        if case.deps:
            flags += ["-v", f"{wheels(case, python.removeprefix('docker:'))}:/deps:ro"]
        argv = ["docker", "run", "--rm", "--network", "none", "--cap-drop", "ALL", "--read-only", "--tmpfs", "/tmp",
                "--user", "0:0", "--label",
                "patcher-bench=upstream", "-v", f"{repo}:/w:ro", "-w", "/w", "--env=PYTHONPATH=/w/src:/w:/deps", *flags,
                python.removeprefix("docker:"), "python3", *pytest]
        return _merged(subprocess.run(argv, capture_output=True, text=True, timeout=600), case)
    path = [str(repo / "src")] if (repo / "src").is_dir() else []
    env |= {"PYTHONPATH": os.pathsep.join([*path, str(repo)])}
    return _merged(subprocess.run([str(venv(case, python)), *pytest], cwd=repo, env={**os.environ, **env},
                                  capture_output=True, text=True, timeout=600), case)


def _merged(run: subprocess.CompletedProcess[str], case: Case) -> subprocess.CompletedProcess[str]:
    """unittest writes its report to stderr: for such a case, stdout is that report (what a user would paste)."""
    if case.runner == "unittest":
        run.stdout = run.stdout + run.stderr
    return run


def base_traceback(case: Case, built: Built, python: str = sys.executable) -> str:
    """The fix's test run on the base: the traceback a user would paste."""
    return run_tests(python, built.repo, case).stdout


def check(case: Case, built: Built, python: str = sys.executable) -> Checked:
    interpreter = python
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
