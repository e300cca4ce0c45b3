"""The held-out judge's calls on the box side (sandbox/judge/heldout/calls.py), on this machine (no Docker): the same
inputs called in turn in one process, and each alone in a process forked for it after the import, so that an
answer left behind by an earlier call shows."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.boxfiles import box_module

heldcalls = box_module("judge/heldout/calls.py", "_test_heldcalls")
roots = box_module("judge/roots.py", "_test_roots")
heldnames = box_module("judge/heldout/names.py", "_test_heldnames")
plain = box_module("plain.py", "_test_plain")
heldrecord = box_module("judge/heldout/record.py", "_test_heldrecord")

STICKY = """def cost(weight, surcharge=None):
    if surcharge is None:
        surcharge = getattr(cost, "last", 0)
    cost.last = surcharge
    if weight < 0:
        raise ValueError(weight)
    return weight + surcharge
"""


def _calls(tmp_path: Path, alone: bool, calls: list[tuple[Any, ...]], source: str = STICKY, func: str = "cost",
           lines: dict[str, list[int]] | None = None, preload: list[str] | None = None) -> list[dict[str, Any]]:
    """The calls' records (outcome "o", path "p", "rx"); this process keeps its memory limit and its SIGALRM handler
    (the box's are its own)."""
    (tmp_path / "sticky_mod.py").write_text(source)
    job = {"root": str(tmp_path), "lines": lines or {}, "target": {"module": "sticky_mod", "qualname": func,
                                                                   "kind": "function"},
           "calls": [{"pos": [plain.encode(a) for a in c], "kw": []} for c in calls], "per_call_s": 2.0,
           "total_s": 10.0, "alone": alone, "preload": preload or []}
    out: list[dict[str, Any]] = []
    alarm = signal.getsignal(signal.SIGALRM)
    try:
        roots.take(str(tmp_path), "")  # as patcher_heldout.py does before any mode runs
        heldcalls.run(job, out.append, heldnames, plain)
    finally:
        signal.signal(signal.SIGALRM, alarm)
        sys.modules.pop("sticky_mod", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
    return [r for r in out if r.get("k") == "call"]


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_each_call_alone_answers_with_nothing_left_behind_by_the_calls_before_it(
        tmp_path: Path) -> None:
    calls = [(2, 5), (3,), (-1,), (4,)]
    in_turn = [r["o"] for r in _calls(tmp_path, False, calls)]
    assert [o.get("r") or o.get("x") for o in in_turn] == [["i", "7"], ["i", "8"], "ValueError", ["i", "9"]]
    alone = [r["o"] for r in _calls(tmp_path, True, calls)]
    assert [o.get("r") or o.get("x") for o in alone] == [["i", "7"], ["i", "3"], "ValueError", ["i", "4"]]


SHAPE = """RATES = {"EUR": 1.0}


def convert(amount, code):
    if code not in RATES and not any(c.islower() for c in code):
        return float(amount)
    if amount < 0:
        raise ValueError(amount)
    return amount * RATES[code]
"""


def test_an_exception_is_raised_within_the_diffs_lines_only_when_the_calls_own_exception_passed_them(
        tmp_path: Path) -> None:
    """`any()` closes its generator early (GeneratorExit in the diff's line): the KeyError that ends the call comes
    from a line of the base, and the path is a branch of the diff's lines, not one cut short by them."""
    got = _calls(tmp_path, False, [(1, "esc"), (-1, "EUR"), (2, "AB")], SHAPE, "convert",
                 {"sticky_mod.py": [5, 6, 7, 8]})
    assert [(r["o"].get("x"), r.get("rx", False)) for r in got] == [("KeyError", False), ("ValueError", True),
                                                                      (None, False)]
    assert {line for _, line, _ in got[0]["p"]} == {5, 7} and {line for _, line, _ in got[2]["p"]} == {5, 6}


LOADED = """import sys


def loaded(name):
    return name in sys.modules
"""


def test_the_modules_the_tests_process_had_loaded_are_loaded_before_the_call_whatever_their_import_does(
        tmp_path: Path) -> None:
    """Code that tells a test run by what is loaded sees one in the calling process too; a name that does not
    import (or raises on import) is passed over."""
    (tmp_path / "noisy_import.py").write_text("raise SystemExit('no')\n")
    for name in ("xml.dom.minidom", "noisy_import", "no_such_module_here"):
        sys.modules.pop(name, None)
    try:
        got = _calls(tmp_path, False, [("xml.dom.minidom",), ("noisy_import",)], LOADED, "loaded",
                     preload=["no_such_module_here", "noisy_import", "xml.dom.minidom"])
        assert [r["o"].get("r") for r in got] == [["b", True], ["b", False]], got
    finally:
        sys.modules.pop("noisy_import", None)


def test_what_is_recorded_as_loaded_leaves_out_the_repositorys_modules_and_the_judges(tmp_path: Path) -> None:
    (tmp_path / "repo_mod_of_the_test.py").write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        __import__("repo_mod_of_the_test")
        got = heldrecord.loaded(str(tmp_path))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("repo_mod_of_the_test", None)
    assert {"json", "pytest", "sys"} <= set(got)
    assert "repo_mod_of_the_test" not in got and "_test_heldrecord" not in got and "__main__" not in got
    assert not [n for n in got if n.startswith(("_test_", "_patcher", "patcher_"))
                and "sandbox" in str(getattr(sys.modules.get(n), "__file__", ""))]
