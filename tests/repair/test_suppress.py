"""Symptom suppression (repair/suppress.py): refused in the engine's candidates, on real repos and real
tracebacks; the shapes also checked one by one on small sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.intake import parse_traceback
from patcher.repair import Stats, candidates
from patcher.repair.site import RepoView
from patcher.repair.suppress import RaiseSite, guard_flipped, raise_site, suppression
from tests.support.offline import EXAMPLES, example_repo, failing_traceback, run_tests

SIGNER = "tokens/signer.py"


def test_the_raise_site_is_the_innermost_repo_frame(tmp_path: Path) -> None:
    repo = example_repo("swap_operands", tmp_path)
    parsed = parse_traceback(failing_traceback(repo))
    assert raise_site(parsed, RepoView(repo)) == RaiseSite(SIGNER, 12, "SignatureExpired")


def test_weakening_the_guard_passes_the_suite_but_is_never_a_candidate(tmp_path: Path) -> None:
    repo = example_repo("swap_operands", tmp_path)
    parsed = parse_traceback(failing_traceback(repo))
    original = (repo / SIGNER).read_text()
    weakened = original.replace("if age < 0:", "if age < -1:")
    (repo / SIGNER).write_text(weakened)
    assert run_tests(repo).returncode == 0  # the suite cannot tell: only the engine's refusal stops it
    (repo / SIGNER).write_text(original)

    stats = Stats()
    found = list(candidates(parsed, repo, stats=stats))
    assert weakened not in {c.new_text for c in found}
    assert stats.suppressing >= 3  # `<=`, `< -1`, `age` → another name on the guard, at least
    flips = []
    for c in found:
        changed = {int(line.split(":")[0]) for line in _changed_lines(original, c.new_text)}
        if 11 in changed:  # the guard of the raise is only ever turned into its complement, and that late
            assert c.last and c.new_text == original.replace("if age < 0:", "if age >= 0:"), c
            flips.append(c)
            (repo / SIGNER).write_text(c.new_text)
            assert run_tests(repo).returncode != 0  # it still raises, for the valid ones: the suite says so
            (repo / SIGNER).write_text(original)
    fix = next(i for i, c in enumerate(found)
               if c.template == "swap_operands" and "age = now - timestamp" in c.new_text)
    assert all(found.index(c) > fix for c in flips)


def _changed_lines(old: str, new: str) -> list[str]:
    a, b = old.splitlines(), new.splitlines()
    return [f"{i + 1}:{x}" for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]


SOURCE = '''\
def check(age, items):
    for item in items:
        if item is None:
            continue
    if age < 0:
        raise ValueError(f"age {age}")
    return age
'''
SITE = RaiseSite("m.py", 6, "ValueError")


@pytest.mark.parametrize(("old", "new", "why"), [
    ("if age < 0:", "if age < -1:", "weakens the check"),
    ("if age < 0:", "if age < 0 and items:", "weakens the check"),
    ('        raise ValueError(f"age {age}")\n', "        pass\n", "deletes the raise"),
    ('        raise ValueError(f"age {age}")\n', "        return 0\n", "deletes the raise"),
    ("    if age < 0:\n", "    if age == -1:\n        return 0\n    if age < 0:\n", "returns early"),
    ("    if age < 0:\n        raise", "    if age < 0:\n        return None\n        raise", "returns early"),
    ("    if age < 0:\n        raise ValueError(f\"age {age}\")\n",
     "    try:\n        if age < 0:\n            raise ValueError(f\"age {age}\")\n"
     "    except ValueError:\n        pass\n",
     "catches the reported ValueError"),
])
def test_suppressing_shapes_are_named(old: str, new: str, why: str) -> None:
    assert old in SOURCE
    assert why in (suppression(SITE, "m.py", SOURCE, SOURCE.replace(old, new)) or "")


@pytest.mark.parametrize(("old", "new"), [
    ('raise ValueError(f"age {age}")', 'raise ValueError(f"negative age {age}")'),  # still raises
    ('raise ValueError(f"age {age}")', 'raise TypeError(f"age {age}")'),
    ("    return age\n", "    return age + 1\n"),  # after the raise, not guarding it
    ("        if item is None:\n", "        if not item:\n"),  # another check, not the raise's
])
def test_changes_that_keep_the_raise_are_not_flagged(old: str, new: str) -> None:
    assert old in SOURCE
    assert suppression(SITE, "m.py", SOURCE, SOURCE.replace(old, new)) is None


@pytest.mark.parametrize(("old", "new", "flipped"), [
    ("if age < 0:", "if age >= 0:", True),
    ("if age < 0:", "if not age < 0:", True),
    ("if age < 0:", "if age > 0:", False),  # not the complement: refused as a weakening
    ("if age < 0:", "if 0 >= age:", False),
    ("if age < 0:", "if age >= 1:", False),
    ("    if age < 0:\n", "    if age >= 0:\n        age = 0\n", False),  # and something else
])
def test_a_guard_turned_into_its_complement_is_allowed_and_marked(old: str, new: str, flipped: bool) -> None:
    changed = SOURCE.replace(old, new)
    assert guard_flipped(SITE, "m.py", SOURCE, changed) is flipped
    assert (suppression(SITE, "m.py", SOURCE, changed) is None) is flipped


def test_flipping_an_assert_or_an_unrelated_check_is_not_a_guard_flip() -> None:
    source = "def f(x):\n    assert x == 1\n    return x\n"
    site = RaiseSite("m.py", 2, "AssertionError")
    flipped = source.replace("x == 1", "x != 1")
    assert "weakens the assert" in (suppression(site, "m.py", source, flipped) or "")
    assert not guard_flipped(site, "m.py", source, flipped)
    assert not guard_flipped(SITE, "m.py", SOURCE, SOURCE.replace("if item is None:", "if item is not None:"))


def test_another_file_or_no_site_is_not_flagged() -> None:
    weakened = SOURCE.replace("if age < 0:", "if age < -1:")
    assert suppression(SITE, "other.py", SOURCE, weakened) is None
    assert suppression(None, "m.py", SOURCE, weakened) is None


def test_widening_an_except_whose_handler_does_something_is_allowed() -> None:
    old = (EXAMPLES / "widen_except/config/ports.py").read_text()
    new = old.replace("except ValueError:", "except (ValueError, TypeError):")
    site = RaiseSite("config/ports.py", 0, "TypeError")
    assert suppression(site, "config/ports.py", old, new) is None
    discarding = new.replace("return default", "pass")
    assert "discards" in (suppression(site, "config/ports.py", old, discarding) or "")




def test_the_guard_flip_example_is_fixed_by_turning_the_guard_into_its_complement(tmp_path: Path) -> None:
    repo = example_repo("guard_flip", tmp_path)
    found = list(candidates(parse_traceback(failing_traceback(repo)), repo))
    flips = [c for c in found if c.last]
    assert [c.description for c in flips] == ["`==` → `!=`"] and found[-1] == flips[0]
    assert "if len(batch) != size:" in flips[0].new_text
    (repo / "batches/split.py").write_text(flips[0].new_text)
    assert run_tests(repo).returncode == 0
