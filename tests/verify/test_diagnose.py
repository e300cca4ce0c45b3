"""A reproduction that errors on the base says why, and what to do: read from real pytest and unittest output
(run here on small projects), and end to end in the box (a test that imports a module the env lacks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job
from patcher.verify import TestRun, not_reproduced, why_not_run
from patcher.verify.stream import Failure, Stream
from tests.support.helpers import make_repo

FILES = {
    "app/__init__.py": "",
    "app/core.py": "def value(d):\n    return d['x']\n",
    "tests/test_mock.py": "import mock\n\n\ndef test_a():\n    assert mock\n",
    "tests/test_fixture.py": "def test_b(mocker):\n    assert mocker\n",
    "tests/test_py2.py": 'def test_c():\n    print "old"\n',
    "tests/test_own.py": "import appx.core\n\n\ndef test_d():\n    pass\n",
    "tests/test_ok.py": "def test_e():\n    assert 1\n",
    "tests/test_ut.py": "import unittest\n\nimport mock\n\n\nclass T(unittest.TestCase):\n    def test_f(self):\n"
                        "        pass\n",
    "tests/test_version.py": "from app.core import missing_name\n\n\ndef test_g():\n    pass\n",
}
REPO_FILES = [*FILES, "appx/__init__.py", "appx/core.py"]


def output_of(project: Path, *argv: str) -> TestRun:
    """A TestRun as the box makes it of an `error` run, from the real runner's output."""
    done = subprocess.run([sys.executable, *argv], cwd=project, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    text = done.stdout + done.stderr
    return TestRun(" ".join(argv), done.returncode, False, False, output_tail=text[-4000:], failure_text=text)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("why")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors")


@pytest.mark.parametrize(("target", "says"), [
    ("tests/test_mock.py::test_a", "importing raised `No module named 'mock'`: the package is not in the environment; "
                                   "add `mock` to the test requirements (or pass `--setup \"pip install mock\"`)"),
    ("tests/test_fixture.py::test_b", "pytest found no fixture `mocker`; it comes from the pytest plugin "
                                      "`pytest-mock`: add it to the test requirements"),
    ("tests/test_py2.py::test_c", "`tests/test_py2.py` line 2 does not parse under the box's Python (SyntaxError: "),
    ("tests/test_own.py::test_d", "the repository's own `appx`: the project is not installed in the environment"),
    ("tests/test_ok.py::test_nothing", "pytest found no test `"),
    ("tests/test_version.py::test_g", "importing raised `ImportError: cannot import name 'missing_name' from "
                                      "'app.core'"),
])
def test_real_pytest_errors_are_explained(project: Path, target: str, says: str) -> None:
    why = why_not_run(output_of(project, *PYTEST, target), REPO_FILES)
    assert why is not None and says in why, why


def test_a_unittest_module_that_does_not_import_is_explained(project: Path) -> None:
    run = output_of(project, "-m", "unittest", "-v", "tests.test_ut")
    assert "No module named 'mock'" in (why_not_run(run, REPO_FILES) or "")


def test_nothing_known_says_nothing_and_the_message_keeps_its_old_words() -> None:
    run = TestRun("python -m pytest -q", 3, False, False, output_tail="INTERNALERROR>", failure_text="INTERNALERROR>")
    assert why_not_run(run) is None
    assert not_reproduced(run, "python -m pytest -q", "KeyError", None) == (
        "`python -m pytest -q` did not fail on the base code (outcome: error); the crash does not reproduce")


def test_a_run_killed_by_signal_9_says_so() -> None:
    """more-itertools 8's suite importing the image's more_itertools ran out of the box's memory: killed, no report."""
    run = TestRun("python -m pytest -q", -9, False, False, output_tail="killed by signal 9\n....FFFF..")
    assert why_not_run(run).startswith("its process was killed (signal 9), in the box most often by the memory limit")
    assert why_not_run(TestRun("python -m pytest -q", 1, False, False, output_tail="....FFFF..")) is None


def test_a_failure_with_another_exception_names_what_it_raised() -> None:
    stream = Stream(failed={"tests/t.py::test_a"},
                    failures={"tests/t.py::test_a": [Failure("TypeError", [("tests/t.py", "test_a"),
                                                                            ("app/core.py", "value")])]})
    run = TestRun("python -m pytest -q tests/t.py", 1, False, True, failed={"tests/t.py::test_a"}, stream=stream)
    assert not_reproduced(run, "python -m pytest -q tests/t.py", "KeyError", ("app/core.py", "value")) == (
        "`python -m pytest -q tests/t.py` failed on the base code, but not with KeyError raised through "
        "app/core.py in value (it raised TypeError through app/core.py in value); the crash does not reproduce")


@pytest.mark.docker
def test_a_reproduction_that_cannot_import_says_which_module_and_what_to_do(sandbox_image: str,
                                                                             tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "app", {k: FILES[k] for k in ("app/__init__.py", "app/core.py", "tests/test_mock.py")})
    traceback = ('Traceback (most recent call last):\n  File "app/core.py", line 2, in value\n'
                 "    return d['x']\nKeyError: 'x'\n")
    spec = JobSpec(repo=str(repo), traceback=traceback, test_command="python -m pytest -q tests/test_mock.py",
                   engine="offline", sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=60),
                   trace_dir=tmp_path / "runs")
    result = run_job(spec)
    assert (result.status, result.reason) == ("not_verified", "not_reproduced")
    assert result.message == (
        "`python -m pytest -q tests/test_mock.py` did not run its test on the base code: importing raised "
        "`No module named 'mock'`: the package is not in the environment; add `mock` to the test "
        "requirements (or pass `--setup \"pip install mock\"`)"), result.message
