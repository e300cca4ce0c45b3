"""Regression test selection for candidate checks (repair/select.py): by coverage of the edited function."""

from __future__ import annotations

from pathlib import Path

from patcher.repair.select import Selection

CODE = "X = 1\n\n\ndef f(a):\n    return a + 1\n\n\ndef g(b):\n    return b * 2\n"
RUNS: list[dict[str, object]] = [
    {"id": "tests/test_m.py::test_f", "outcome": "passed", "lines": {"m.py": [5]}},
    {"id": "tests/test_m.py::test_g", "outcome": "passed", "lines": {"m.py": [9]}},
    {"id": "tests/test_m.py::test_other", "outcome": "failed", "lines": {"other.py": [1]}},
]
EVERY = {"tests/test_m.py::test_f", "tests/test_m.py::test_g", "tests/test_m.py::test_other"}


def test_only_tests_that_ran_the_function_and_those_that_failed_run(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CODE)
    select = Selection(RUNS, EVERY, {"tests/test_m.py::test_other"})
    command, chosen = select.command("python -m pytest -q", tmp_path, "m.py", 5)
    assert chosen == {"tests/test_m.py::test_f", "tests/test_m.py::test_other"}
    assert command == "python -m pytest -q tests/test_m.py::test_f tests/test_m.py::test_other"


def test_module_level_edits_and_incomplete_coverage_run_the_whole_suite(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CODE)
    assert Selection(RUNS, EVERY, set()).command("python -m pytest -q", tmp_path, "m.py", 1) == (
        "python -m pytest -q", None)
    missing = Selection(RUNS, EVERY | {"tests/test_m.py::test_new"}, set())
    assert missing.command("python -m pytest -q", tmp_path, "m.py", 5) == ("python -m pytest -q", None)
    assert Selection([], EVERY, set()).command("python -m pytest -q", tmp_path, "m.py", 5)[1] is None
