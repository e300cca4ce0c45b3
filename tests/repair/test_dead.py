"""Dead branches (repair/dead.py): an edit that makes a branch unreachable is never a candidate, on a real
repo with a real traceback; the shapes also checked one by one on small sources."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from patcher.intake import parse_traceback
from patcher.repair import Stats, candidates
from patcher.repair.dead import makes_dead_branch
from tests.support.helpers import make_repo

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


def test_a_branch_made_dead_passes_the_suite_but_is_never_a_candidate(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "every", EVERY)
    parsed = parse_traceback(pytest_run(repo, "tests/test_every.py::test_one").stdout)
    path = repo / "seqs/every.py"
    original = path.read_text()
    dead = original.replace("elif n == 1:", "elif n == 0:")
    path.write_text(dead)
    assert pytest_run(repo).returncode == 0  # the suite cannot tell: only the engine's refusal stops it
    path.write_text(original)

    stats = Stats()
    found = list(candidates(parsed, repo, stats=stats))
    assert dead not in {c.new_text for c in found} and stats.dead >= 1
    assert original.replace("[1::1]", "[0::1]") in {c.new_text for c in found}


def test_which_branches_count_as_made_dead() -> None:
    def made(old: str, new: str) -> bool:
        return makes_dead_branch(ast.parse(old), new)

    chain = "if a == 0:\n    x()\nelif a == 1:\n    y()\nelse:\n    z()\n"
    assert made(chain, chain.replace("a == 1", "a == 0"))
    assert not made(chain, chain.replace("a == 1", "a == 2"))
    assert made("while n:\n    n -= 1\n", "while False:\n    n -= 1\n")
    assert made("if True:\n    x()\n", "if False:\n    x()\n")
    assert not made("if a:\n    x()\nelif a:\n    y()\n", "if a:\n    x()\nelif a:\n    z()\n")  # dead before
    calls = "if next(it):\n    x()\nelif ok(it):\n    y()\n"
    assert not made(calls, calls.replace("ok(it)", "next(it)"))  # a call may answer differently
    separate = "if a == 0:\n    x()\nif a == 1:\n    y()\n"
    assert not made(separate, separate.replace("a == 1", "a == 0"))  # two statements, not one chain
