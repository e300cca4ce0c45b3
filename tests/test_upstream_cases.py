"""The corpus of real upstream fixes (bench/upstream_cases.toml) stays honest without Docker or network: every
entry has the shape bench/upstream.py needs, and the corpus is as large and as varied as issues 34 and 35 ask.
Rebuilding a case (PyPI sdists) is `python -m bench.upstream --check`, never part of this suite."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.upstream_build import splice
from bench.upstream_cases import Case, load, problems

CASES = load()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_entry_has_a_valid_shape(case: Case) -> None:
    assert problems(case) == []


def test_ids_and_fixes_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({(c.commit, c.tests) for c in CASES}) == len(CASES)


def test_the_honest_corpus_has_60_fixes_from_6_projects() -> None:
    assert len(CASES) >= 60
    assert len({c.project for c in CASES}) >= 6


def test_the_real_projects_bench_has_20_bugs_from_5_projects_and_old_pythons() -> None:
    real = [c for c in CASES if c.real_projects]
    assert len(real) >= 20
    assert len({c.project for c in real}) >= 5
    assert {c.python for c in real} >= {"3.9", "3.11"}


def test_the_real_projects_bench_has_30_bugs_of_10_projects_3_of_them_unittest_and_pythons_patcher_chooses() -> None:
    """Issue 41: grown with old projects whose Python patcher chooses itself (they declare Pythons before 3.9) and
    with projects whose tests run under unittest."""
    real = [c for c in CASES if c.real_projects]
    assert len(real) >= 30 and len({c.project for c in real}) >= 10
    assert len({c.project for c in real if c.runner == "unittest"}) >= 3
    assert len({c.project for c in real if not c.ask_python}) >= 3
    assert all(c.test_command.startswith("python -m unittest ") for c in real if c.runner == "unittest")


def test_a_unittest_case_names_its_tests_as_unittest_does() -> None:
    case = next(c for c in CASES if c.id == "pyflakes-780bdcd6")
    assert case.test_command == ("python -m unittest "
                                 "pyflakes.test.test_code_segment.TestCodeSegments.test_scope_async_function")


def test_crashes_are_the_larger_share() -> None:
    kinds = Counter(c.kind for c in CASES)
    assert kinds["crash"] >= kinds["assertion"] / 2
    assert all(c.exception not in ("AssertionError", "Failed") for c in CASES if c.kind == "crash")


def test_a_method_is_replaced_in_place_and_a_new_one_joins_its_class() -> None:
    base = "class A:\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n"
    fixed = "class A:\n    @staticmethod\n    def f():\n        return 2\n\n    def h(self):\n        return 3\n"
    replaced = splice(base, fixed, "A.f")
    assert replaced == "class A:\n    @staticmethod\n    def f():\n        return 2\n\n\ndef g():\n    pass\n"
    added = splice(base, fixed, "A.h")
    assert "    def h(self):\n        return 3\n\ndef g" not in added
    assert added.index("def h") < added.index("def g")
    assert splice(base, "def k():\n    return 4\n", "k").endswith("\n\n\ndef k():\n    return 4\n")


def test_a_method_of_a_class_new_in_the_fixed_release_comes_alone_in_its_class() -> None:
    fixed = ("class T(Base):\n    '''Doc.'''\n\n    def test_a(self):\n        pass\n\n"
             "    def test_b(self):\n        pass\n")
    spliced = splice("x = 1\n", fixed, "T.test_b")
    assert "class T(Base):" in spliced and "def test_b" in spliced and "def test_a" not in spliced
    compile(spliced, "spliced", "exec")


def test_the_bench_reports_a_judge_as_not_judged_only_where_the_verdict_says_so() -> None:
    from bench.coverage import covered

    held = {"held_out": {"compared": 184, "note": "the run ended before its end record"}}
    full = {"judges": held, "coverage": {"full": True, "missing": []}}
    assert covered("verified", full, "ValueError").missing == ()
    lacking = {"judges": held, "coverage": {"full": False, "missing": ["held_out: only 1 input(s)"]}}
    assert covered("unjudged", lacking, "ValueError").missing == ("held_out: only 1 input(s)",)
    assert covered("verified", {"judges": held}, "ValueError").missing == ("held_out: the run ended before its end "
                                                                          "record",)
