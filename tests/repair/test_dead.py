"""Dead branches (repair/dead.py): an edit that makes a branch unreachable is never a candidate, on a real
repo with a real traceback; the shapes also checked one by one on small sources."""

from __future__ import annotations

import ast
from pathlib import Path

from patcher.intake import parse_traceback
from patcher.repair import Stats, candidates
from patcher.repair.dead import makes_dead_branch
from tests.support.helpers import make_repo
from tests.support.offline import EVERY, pytest_run


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
