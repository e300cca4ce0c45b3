"""The changed region (repair/region.py): the candidate checks cut to the top-level statements an edit is
in decide as they do on the whole file, at the file's line numbers."""

from __future__ import annotations

import ast
from pathlib import Path

from patcher.intake import parse_traceback
from patcher.repair import candidates
from patcher.repair.dead import makes_dead_branch
from patcher.repair.region import changed_region
from patcher.repair.site import RepoView
from patcher.repair.suppress import guard_flipped, raise_site, suppression
from tests.support.offline import EXAMPLES, example_repo, failing_traceback

SOURCE = '''\
import os


@staticmethod
def first(xs):
    if not xs:
        raise ValueError("empty")
    return xs[0]


X = 1


def second(xs):
    return xs[1]
'''


def test_the_region_is_the_statement_the_edit_is_in_at_its_line_numbers() -> None:
    new = SOURCE.replace("return xs[0]", "return xs[-1]")
    old_part, new_part = changed_region(ast.parse(SOURCE), SOURCE, new) or ("", "")
    assert old_part.count("\n") == 8 and old_part.startswith("\n\n\n@staticmethod\n")
    assert new_part.splitlines()[7] == "    return xs[-1]" and "second" not in new_part
    assert ast.parse(new_part).body[0].lineno == 5  # decorated: the def's own line number is kept


def test_a_change_between_statements_or_a_lone_carriage_return_checks_the_whole_file() -> None:
    assert changed_region(ast.parse(SOURCE), SOURCE, SOURCE.replace("\n\n\nX = 1", "\n# a note\n\nX = 1")) is None
    assert changed_region(ast.parse(SOURCE), SOURCE, SOURCE.replace("X = 1", "X = 1\rY = 2")) is None


def test_on_every_example_the_region_decides_as_the_whole_file(tmp_path: Path) -> None:
    checked = 0
    for example in sorted(p.name for p in EXAMPLES.iterdir() if (p / "traceback.txt").exists()):
        repo = example_repo(example, tmp_path / example)
        parsed = parse_traceback(failing_traceback(repo))
        site = raise_site(parsed, RepoView(repo))
        for c in candidates(parsed, repo):
            old = (repo / c.path).read_text()
            region = changed_region(ast.parse(old), old, c.new_text)
            if region is None:
                continue
            o, n = region
            assert suppression(site, c.path, o, n) == suppression(site, c.path, old, c.new_text), c
            assert guard_flipped(site, c.path, o, n) == guard_flipped(site, c.path, old, c.new_text), c
            assert makes_dead_branch(ast.parse(o), n) == makes_dead_branch(ast.parse(old), c.new_text), c
            checked += 1
    assert checked > 100
