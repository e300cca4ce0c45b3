"""Edge cases of the newer fix patterns (repair/patterns.py) on small real repos with real tracebacks."""

from __future__ import annotations

from pathlib import Path

from patcher.intake import parse_traceback
from patcher.repair import candidates
from tests.support.helpers import make_repo
from tests.support.offline import failing_traceback


def found(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str]]:
    repo = make_repo(tmp_path / "r", files)
    return [(c.template, c.description) for c in candidates(parse_traceback(failing_traceback(repo)), repo)]


def test_a_name_is_never_replaced_by_the_other_operand(tmp_path: Path) -> None:
    out = found(tmp_path, {"m.py": "def age(stamp, now):\n    return now - stamp\n",
                           "tests/test_m.py": "from m import age\n\n\ndef test_age():\n    assert age(1, 3) == 1\n"})
    names = [d for t, d in out if t == "other_name"]
    assert "`now` → `stamp`" not in names and "`stamp` → `now`" not in names
    assert ("swap_operands", "swap the operands `now` and `stamp`") in out


def test_moved_operands_keep_their_grouping(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "m.py": "def f(a, b, c):\n    return a - b - c\n",
        "tests/test_m.py": "from m import f\n\n\ndef test_f():\n    assert f(1, 2, 3) == 0\n"})
    texts = [c.new_text for c in candidates(parse_traceback(failing_traceback(repo)), repo)
             if c.template == "swap_operands"]
    assert "    return c - (a - b)\n" in {t.splitlines(keepends=True)[1] for t in texts}


def test_constants_true_and_one_are_told_apart(tmp_path: Path) -> None:
    out = found(tmp_path, {"m.py": "def f():\n    return (True, 1)\n",
                           "tests/test_m.py": "from m import f\n\n\ndef test_f():\n    assert f() == (False, 0)\n"})
    assert {d for t, d in out if t == "constant"} == {"`True` → `False`", "`1` → `0`"}


def test_islice_bounds_get_plus_minus_one_but_not_its_iterable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "m.py": "from itertools import islice\n\n\ndef upto(xs, n):\n    return list(islice(xs, n))\n",
        "tests/test_m.py": "from m import upto\n\n\ndef test_upto():\n    assert upto([1, 2, 3], 1) == [1, 2]\n"})
    found = [c for c in candidates(parse_traceback(failing_traceback(repo)), repo) if c.template == "off_by_one"]
    assert {c.description for c in found} == {"`n` → `n - 1`", "`n` → `n + 1`"}
