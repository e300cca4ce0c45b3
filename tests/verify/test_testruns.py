"""What a test run proved: exit code and report must agree, and a run that reports nothing did not run.

Runs go through the real tool server (LocalSandbox); JUnit parsing is checked on hostile XML too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import stage_repo
from patcher.sandbox import LocalSandbox
from patcher.verify import run_tests
from patcher.verify.testruns import node_id, parse_junit
from tests.support.helpers import make_repo

FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_ok():\n    assert add(1, 2) == 3\n\n\n"
                          "def test_bad():\n    assert add(1, 2) == 4\n\n\nclass TestGroup:\n"
                          "    def test_inner(self):\n        assert add(0, 0) == 0\n",
    "tests/test_unit.py": "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                          "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
    "tests/__init__.py": "",
    "tests/test_unit_bad.py": "import unittest\n\n\nclass Bad(unittest.TestCase):\n    def test_key(self):\n"
                              "        {}['x']\n",
    "tests/runtests.py": "import sys\nimport unittest\n\n\ndef main(code_when_green=0):\n"
                         "    suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:])\n"
                         "    result = unittest.TextTestRunner(verbosity=2).run(suite)\n"
                         "    sys.exit(code_when_green if result.wasSuccessful() else 1)\n\n\n"
                         "if __name__ == '__main__':\n    main()\n",
    "tests/strict.py": "from tests.runtests import main\n\nmain(code_when_green=3)\n",
}
RUNNERS = [["python", "-m", "tests.runtests"], ["python", "-m", "tests.strict"]]


@pytest.fixture
def box(tmp_path: Path) -> Iterator[LocalSandbox]:
    staged = stage_repo(str(make_repo(tmp_path / "r", FILES)))
    with LocalSandbox(staged) as b:
        yield b
    staged.cleanup()


def test_pytest_results_come_from_the_junit_report(box: LocalSandbox) -> None:
    run = run_tests(box, "python -m pytest -q tests/test_calc.py", "t")
    assert (run.outcome, run.exit_code, run.reported) == ("failed", 1, True)
    assert run.passed == {"tests/test_calc.py::test_ok", "tests/test_calc.py::TestGroup::test_inner"}
    assert run.failed == {"tests/test_calc.py::test_bad"}
    assert run.shows("AssertionError") and not run.shows("KeyError") and run.shows(None)


def test_a_node_id_run_passes(box: LocalSandbox) -> None:
    run = run_tests(box, "python -m pytest -q tests/test_calc.py::test_ok", "t")
    assert (run.outcome, run.passed, run.failed) == ("passed", {"tests/test_calc.py::test_ok"}, set())


def test_a_process_that_exits_0_without_a_report_did_not_run(box: LocalSandbox) -> None:
    Path(box.repo, "calc.py").write_text("import os\nos._exit(0)\n")
    run = run_tests(box, "python -m pytest -q tests/test_calc.py", "t")
    assert (run.exit_code, run.reported, run.outcome) == (0, False, "error")


def test_nothing_collected_is_not_a_pass(box: LocalSandbox) -> None:
    run = run_tests(box, "python -m pytest -q -k nothing_matches_this", "t")
    assert (run.exit_code, run.outcome) == (5, "error")


def test_unittest_output_is_read_and_must_agree(box: LocalSandbox) -> None:
    run = run_tests(box, "python -m unittest tests.test_unit", "t")
    assert (run.outcome, run.passed) == ("passed", {"tests.test_unit.T.test_add"})


def test_python_c_is_one_test_and_refusals_are_errors(box: LocalSandbox) -> None:
    ok = run_tests(box, "python -c 'import calc; assert calc.add(1, 1) == 2'", "t")
    bad = run_tests(box, "python -c 'import calc; calc.missing'", "t")
    assert (ok.outcome, bad.outcome) == ("passed", "failed") and bad.shows("AttributeError")
    refused = run_tests(box, "bash -c 'exit 0'", "t")
    assert refused.outcome == "error" and "not an allowed test command" in refused.output_tail


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py" />
<testcase classname="tests.test_a.TestX" name="test_m" file="tests/test_a.py"><failure message="boom" type="KeyError">
E KeyError: 'k'</failure></testcase>
<testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py"><skipped message="no" /></testcase>
<testcase classname="tests.test_a" name="test_teardown" file="tests/test_a.py"><error message="teardown" /></testcase>
</testsuite></testsuites>"""


def test_parse_junit_by_node_id() -> None:
    got = parse_junit(JUNIT)
    assert got is not None and got.total == 4
    assert got.passed == {"tests/test_a.py::test_ok"}
    assert got.failed == {"tests/test_a.py::TestX::test_m", "tests/test_a.py::test_teardown"}
    assert "KeyError" in got.messages


@pytest.mark.parametrize("text", [
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>',
    "<testsuites><testsuite>",
    "<html>not a report</html>",
    "<testsuites>" + " " * (9 * 1024 * 1024) + "</testsuites>",
])
def test_hostile_or_broken_reports_are_no_reports(text: str) -> None:
    assert parse_junit(text) is None


def test_node_ids_without_a_file_attribute() -> None:
    assert node_id("tests.test_a.TestX", "test_m", None) == "tests/test_a.py::TestX::test_m"
    assert node_id("", "tests.test_broken", None) == "tests/test_broken.py"


@pytest.fixture
def runner_box(tmp_path: Path) -> Iterator[LocalSandbox]:
    staged = stage_repo(str(make_repo(tmp_path / "r", FILES)))
    with LocalSandbox(staged, SandboxConfig(allowlist=RUNNERS)) as b:
        yield b
    staged.cleanup()


def test_a_projects_own_unittest_runner_is_read_from_the_harness(runner_box: LocalSandbox) -> None:
    run = run_tests(runner_box, "python -m tests.runtests tests.test_unit", "t")
    assert (run.outcome, run.reported, run.tampered) == ("passed", True, "")
    assert run.passed == {"tests.test_unit.T.test_add"} and run.failed == set()
    bad = run_tests(runner_box, "python -m tests.runtests tests.test_unit tests.test_unit_bad", "t")
    assert (bad.outcome, bad.passed, bad.failed) == ("failed", {"tests.test_unit.T.test_add"},
                                                     {"tests.test_unit_bad.Bad.test_key"})
    assert bad.crashed("KeyError", ("tests/test_unit_bad.py", "test_key"))
    assert not bad.crashed("KeyError", ("calc.py", "add"))


def test_a_runner_that_fails_a_green_run_fails_it_without_calling_it_tampering(runner_box: LocalSandbox) -> None:
    run = run_tests(runner_box, "python -m tests.strict tests.test_unit", "t")
    assert (run.outcome, run.exit_code, run.tampered) == ("failed", 3, "")
    assert run.passed == {"tests.test_unit.T.test_add"}
    assert run.failed == {"python -m tests.strict tests.test_unit (exit 3)"}


def test_a_runner_that_runs_nothing_or_is_not_declared_proves_nothing(runner_box: LocalSandbox) -> None:
    assert run_tests(runner_box, "python -m tests.runtests", "t").outcome == "error"  # no test named: none ran
    refused = run_tests(runner_box, "python -m tests.other", "t")
    assert refused.outcome == "error" and "refused" in refused.output_tail
