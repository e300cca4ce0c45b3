"""The templates of issue 28 (repair/library_bugs.py, the empty-conversion guard, data-flow lines): each bundled
example's intended fix is a candidate whose tests pass, and where the kind would silence the exception
(a guard in front of the `raise` that reports it) the candidate is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.intake import parse_traceback
from patcher.repair import Stats, candidates
from patcher.repair.dataflow import feeding_lines
from patcher.repair.edits import Source
from patcher.repair.localize import Suspect
from tests.support.helpers import git
from tests.support.offline import example_repo, failing_traceback, run_tests

# example → (template, file, text the fix puts in)
INTENDED = {
    "unbound_init": ("unbound_init", "layout/margins.py", "top = bottom = base * 2"),
    "bounds_guard": ("bounds_guard", "words/first.py", "if words and words[0].isupper():"),
    "wrong_key": ("wrong_key", "limits/table.py", 'return LIMITS["medium"]'),
    "empty_conversion": ("empty_guard", "config/ports.py", "if not value:"),
    "swap_later": ("swap_args", "progress/bar.py", "left = remaining(total, done)"),
}


@pytest.mark.parametrize("name", sorted(INTENDED))
def test_the_intended_fix_is_an_early_candidate_and_passes(name: str, tmp_path: Path) -> None:
    template, path, text = INTENDED[name]
    repo = example_repo(name, tmp_path)
    parsed = parse_traceback(failing_traceback(repo))
    src = (repo / path).read_text()
    suspects = [Suspect(path, n, 0.5) for n in range(1, src.count("\n") + 2)]  # coverage: all lines alike
    found = list(candidates(parsed, repo, 30, suspects=suspects))
    hit = next(c for c in found if c.template == template and text in c.new_text)
    assert found.index(hit) < 10, [(c.template, c.line) for c in found[:12]]
    (repo / path).write_text(hit.new_text)
    assert run_tests(repo).returncode == 0


def test_data_flow_reaches_the_line_that_made_the_value() -> None:
    src = Source.parse("m.py", "def f(a, b):\n    x = g(b, a)\n    y = 1\n    z = [x] * 2\n    w = 3\n"
                       "    return z[y + 5]\n")
    assert src is not None
    assert feeding_lines(src, 6) == [4, 3, 2]


def _repo(tmp_path: Path, code: str, test: str) -> tuple[Path, str]:
    repo = tmp_path / "r"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text(code)
    (repo / "tests" / "test_mod.py").write_text(test)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo, failing_traceback(repo)


def _changed(old: str, new: str) -> set[int]:
    a, b = old.splitlines(), new.splitlines()
    if len(a) != len(b):
        return {next((i + 1 for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))}
    return {i + 1 for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y}


REFUSED = {
    "bounds_guard": (
        "def head(rows):\n    if not rows[0]:\n        raise IndexError('the first row is empty')\n"
        "    return rows[0]\n",
        "from pkg.mod import head\n\n\ndef test_head():\n    assert head([[1]]) == [1]\n    head([[]])\n"),
}


@pytest.mark.parametrize("template", sorted(REFUSED))
def test_a_guard_in_front_of_the_raise_is_refused(template: str, tmp_path: Path) -> None:
    code, test = REFUSED[template]
    repo, traceback = _repo(tmp_path, code, test)
    stats = Stats()
    found = list(candidates(parse_traceback(traceback), repo, stats=stats))
    assert stats.suppressing >= 1
    for c in found:  # nothing returns early before the raise or changes the condition that guards it
        assert not (_changed(code, c.new_text) & {1, 2, 3}) or c.template != template, c


def test_the_empty_value_guard_never_goes_in_front_of_a_raise_of_the_value_error(tmp_path: Path) -> None:
    """The repository means to refuse a blank port: a guard returning None before that raise would hide
    it. The guard's subject is a conversion's argument on the failing line, so none is proposed there."""
    code = ("def port(text):\n    value = text.strip()\n    if not value:\n"
            "        raise ValueError(\"empty port: ''\")\n    return int(value)\n")
    repo, traceback = _repo(tmp_path, code, "from pkg.mod import port\n\n\ndef test_port():\n"
                            "    assert port('') is None\n")
    assert "empty port: ''" in traceback
    found = list(candidates(parse_traceback(traceback), repo))
    assert not [c for c in found if c.template == "empty_guard" and _changed(code, c.new_text) & {1, 2, 3, 4}]


def test_an_unbound_name_after_a_swallowed_error_is_not_initialised(tmp_path: Path) -> None:
    """`data` is unbound because an `except` discarded the error: setting it would hide that, so the
    template (which initialises names first assigned outside a `try`, and completes `if` branches)
    proposes nothing."""
    code = ("def load(table, key):\n    try:\n        data = table[key]\n    except KeyError:\n        pass\n"
            "    return data\n")
    repo, traceback = _repo(tmp_path, code, "from pkg.mod import load\n\n\ndef test_load():\n"
                            "    assert load({}, 'a') == 1\n")
    assert "UnboundLocalError" in traceback
    assert not [c for c in candidates(parse_traceback(traceback), repo) if c.template == "unbound_init"]


def test_a_wrong_key_is_not_replaced_on_a_raise_that_names_it(tmp_path: Path) -> None:
    code = ("MODES = {'fast': 1, 'slow': 2}\n\n\ndef mode(cfg):\n    if cfg['mode'] not in MODES:\n"
            "        raise KeyError(cfg['mode'])\n    return MODES[cfg['mode']]\n")
    repo, traceback = _repo(tmp_path, code, "from pkg.mod import mode\n\n\ndef test_mode():\n"
                            "    assert mode({'mode': 'quick'}) == 1\n")
    stats = Stats()
    found = list(candidates(parse_traceback(traceback), repo, stats=stats))
    assert not [c for c in found if c.template == "wrong_key" and _changed(code, c.new_text) & {5, 6}]
    assert stats.suppressing >= 1  # `cfg['fast']` on the guard: refused as a changed condition of the raise
