"""Shared by the tests: the examples/offline projects as git repos, their tracebacks from really running
the bug, and a repo whose bug a dead branch would hide."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.helpers import git

EXAMPLES = Path(__file__).parents[2] / "examples" / "offline"


def run_tests(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def example_repo(name: str, tmp_path: Path) -> Path:
    repo = tmp_path / name
    shutil.copytree(EXAMPLES / name, repo, ignore=shutil.ignore_patterns("__pycache__", "traceback.txt"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def failing_traceback(repo: Path) -> str:
    run = run_tests(repo)
    assert run.returncode == 1, run.stdout + run.stderr
    return run.stdout


EVERY = {
    "seqs/__init__.py": "",
    "seqs/every.py": ('def every(items, n=1):\n    """Every n-th item, from the first."""\n'
                      '    if n == 0:\n        raise ValueError("n must be > 0")\n'
                      '    elif n == 1:\n        return items[1::1]\n'
                      '    else:\n        return items[0::n]\n'),
    "tests/test_every.py": ("import pytest\n\nfrom seqs.every import every\n\n\n"
                            "def test_one():\n    assert every([1, 2, 3]) == [1, 2, 3]\n\n\n"
                            "def test_n():\n    assert every([1, 2, 3, 4]) == [1, 2, 3, 4]\n"
                            "    assert every([1, 2, 3, 4], 2) == [1, 3]\n\n\n"
                            "def test_zero():\n    with pytest.raises(ValueError):\n        every([1], 0)\n"),
}
"""The `n == 1` fast path is wrong (`[1::1]`); `elif n == 0:` would skip it and pass every test."""


def pytest_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", *args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=env)
