"""Real pytest tracebacks of the project in tests/data/tracebacks/nested, in each --tb format, one per test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

NESTED = Path(__file__).parents[1] / "data" / "tracebacks" / "nested"
FORMATS = ("long", "short", "auto", "native", "line")
NESTED_FILES = ["check_code.py", "pkg/__init__.py", "pkg/code.py", "pyproject.toml"]
_SECTION = re.compile(r"^_{3,} (?P<name>\S+) _{3,}$", re.MULTILINE)
_BANNER = "=================================== FAILURES ===================================\n"
_LINE_END = re.compile(r"^\S+\.py:\d+: \w.*$", re.MULTILINE)


def run_pytest(tb: str, project: Path = NESTED) -> str:
    """pytest's whole output for `--tb=tb`, run where the project is (paths print relative to it)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--tb={tb}",
            "--rootdir", str(project), "-W", "ignore::pytest.PytestUnraisableExceptionWarning"]
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout


def failures(text: str, tb: str) -> list[str]:
    """Each failing test's part of the output (with the FAILURES banner, as a user would paste it), in order.

    `--tb=line` has no sections: a failure ends at its `path:line: Exception` line."""
    body = text.split(_BANNER, 1)[1].split("=== short test summary info ===")[0]
    if tb == "line":
        ends = [m.end() for m in _LINE_END.finditer(body)]
        return [_BANNER + body[a:b] for a, b in zip([0, *ends], ends, strict=False)]
    starts = [m.start() for m in _SECTION.finditer(body)]
    return [_BANNER + body[a:b] for a, b in zip(starts, [*starts[1:], len(body)], strict=True)]
