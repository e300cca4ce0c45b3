"""The harness on real Docker: the runner cannot be replaced from the repo, outcomes come from the
signed stream, and honest repositories of every layout still verify (src, flat, unittest, `pytest`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.pipeline import verify_patch
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Job, run_baseline, run_tests, verify
from tests.support import cheats as c
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

UNITTESTS = ("import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n"
             "    def test_zero(self):\n        self.assertEqual(calc.safe_div(1, 0), 0)\n\n"
             "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n")
UNITTEST_TB = ('Traceback (most recent call last):\n  File "/app/tests/test_calc.py", line 8, in test_zero\n'
               "    self.assertEqual(calc.safe_div(1, 0), 0)\n"
               '  File "/app/calc.py", line 2, in safe_div\n    return a / b\nZeroDivisionError: division by zero\n')


def box_for(image: str):  # type: ignore[no-untyped-def]
    def open_box(tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=image, test_timeout_s=60), docker_client())
    return open_box


def test_a_runner_module_already_in_the_repo_does_not_replace_the_runner(tmp_path: Path, sandbox_image: str) -> None:
    files = {**c.FILES, "pytest.py": "print('SHADOW')\nraise SystemExit(0)\n",
             "unittest.py": "print('Ran 9 tests in 0.1s')\nprint('OK')\nraise SystemExit(0)\n",
             "tests/__init__.py": "", "tests/test_u.py": UNITTESTS}
    staged = stage_repo(str(make_repo(tmp_path / "calc", files)))
    try:
        with box_for(sandbox_image)(staged) as box:
            py = run_tests(box, "python -m pytest -q tests/test_calc.py", "t")
            bare = run_tests(box, "pytest -q tests/test_calc.py", "t")
            ut = run_tests(box, "python -m unittest tests.test_u", "u")
    finally:
        staged.cleanup()
    for run in (py, bare):
        assert "SHADOW" not in run.output_tail and run.outcome == "failed" and not run.tampered
        assert run.failed == {"tests/test_calc.py::test_zero"} and run.passed == {"tests/test_calc.py::test_add"}
        assert run.crashed("ZeroDivisionError", c.SITE) and not run.crashed("ZeroDivisionError", ("calc.py", "add"))
    assert ut.outcome == "failed" and ut.failed == {"tests.test_u.TestCalc.test_zero"}
    assert ut.passed == {"tests.test_u.TestCalc.test_add"} and ut.crashed("ZeroDivisionError", c.SITE)


def test_a_unittest_repository_is_verified(tmp_path: Path, sandbox_image: str) -> None:
    repo = make_repo(tmp_path / "calc", {"calc.py": c.CALC, "tests/__init__.py": "", "tests/test_calc.py": UNITTESTS})
    diff = c.make_diff(repo, tmp_path / "work", {"calc.py": c.FIXED})
    cfg = SandboxConfig(image=sandbox_image, test_timeout_s=60)
    result = verify_patch(str(repo), diff, test_command="python -m unittest tests.test_calc.TestCalc.test_zero",
                          traceback=UNITTEST_TB, suite_command="python -m unittest", sandbox=cfg, trace_dir=tmp_path)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.verification["fail_to_pass"] == ["tests.test_calc.TestCalc.test_zero"]
    unfixed = c.make_diff(repo, tmp_path / "work", {"calc.py": c.CALC + "\n# nothing\n"})
    result = verify_patch(str(repo), unfixed, test_command="python -m unittest tests.test_calc.TestCalc.test_zero",
                          traceback=UNITTEST_TB, suite_command="python -m unittest", sandbox=cfg, trace_dir=tmp_path)
    assert (result.status, result.reason) == ("not_verified", "tests_failed"), result.message


@pytest.mark.parametrize("suite", ["python -m pytest -q", "pytest -q"])
def test_a_src_layout_with_a_new_regression_test_is_verified(tmp_path: Path, sandbox_image: str, suite: str) -> None:
    files = {"src/mathx/__init__.py": "", "src/mathx/ops.py": c.CALC,
             "tests/test_ops.py": "from mathx.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    repo = make_repo(tmp_path / "mathx", files)
    staged = stage_repo(str(repo))
    site = ("src/mathx/ops.py", "safe_div")
    try:
        job = Job(staged, box_for(sandbox_image), suite, None, c.EXC, site)
        base = run_baseline(job)
        assert base.suite.passed == {"tests/test_ops.py::test_add"}, base.suite.output_tail
        regression = "from mathx.ops import safe_div\n\n\ndef test_zero():\n    assert safe_div(1, 0) == 0\n"
        diff = c.make_diff(repo, tmp_path / "work", {"src/mathx/ops.py": c.FIXED, "tests/test_zero.py": regression})
        ver = verify(job.with_baseline(base), diff)
    finally:
        staged.cleanup()
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    assert ver.fail_to_pass == ["tests/test_zero.py::test_zero"]


def test_a_repo_whose_tests_run_pytest_in_process_is_not_flagged(tmp_path: Path, sandbox_image: str) -> None:
    # testdir, not pytester: the same in-process run, and also in the pytest 6.0 of Debian bullseye's Python 3.9
    nested = ("def test_inner(testdir):\n    testdir.makepyfile('def test_a():\\n    pass\\n\\n\\ndef test_b():\\n"
              "    assert 0\\n')\n    testdir.runpytest().assert_outcomes(passed=1, failed=1)\n")
    files = {"tests/conftest.py": "pytest_plugins = ['pytester']\n", "tests/test_nested.py": nested}
    staged = stage_repo(str(make_repo(tmp_path / "nested", files)))
    try:
        with box_for(sandbox_image)(staged) as box:
            run = run_tests(box, "python -m pytest -q tests/test_nested.py", "t")
    finally:
        staged.cleanup()
    assert not run.tampered and run.outcome == "passed", run.output_tail
    assert run.passed == {"tests/test_nested.py::test_inner"} and run.failed == set()
