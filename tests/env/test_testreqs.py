"""Test requirements found where projects keep them, read from the files (setup.py and noxfile.py with ast,
never run), in the documented order, each with the place it came from."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import docker
import docker.errors
import pytest

from patcher.env import EnvConfig
from patcher.env.plan import detect, env_key, setup_script
from patcher.pipeline import JobSpec, run_job
from patcher.trace import analyze_file, render
from tests.support.helpers import make_repo

WORDS = EnvConfig().extras
TRACEBACK = """Traceback (most recent call last):
  File "tests/check_windows.py", line 11, in test_pairs
    assert windows([1, 2, 3]) == [(1, 2), (2, 3)]
  File "legacy/windows.py", line 10, in windows
    return [(items[i], items[i + 1]) for i in range(len(items))]
IndexError: list index out of range
"""


def plan_of(tmp_path: Path, files: dict[str, str]):  # type: ignore[no-untyped-def]
    plan = detect(make_repo(tmp_path / "repo", {"app.py": "x = 1\n", **files}), None, WORDS)
    assert plan is not None
    return plan


@pytest.mark.parametrize(("files", "requirements"), [
    ({"test_requirements.txt": "mock\n"}, ["test_requirements.txt"]),
    ({"requirements-dev.txt": "mock\n", "requirements_test.txt": "x\n", "dev-requirements.txt": "y\n",
      "requirements-docs.txt": "sphinx\n", "requirements.txt": "six\n"},
     ["requirements.txt", "dev-requirements.txt", "requirements-dev.txt", "requirements_test.txt"]),
    ({"test/requirements.txt": "mock\n", "tests/requirements-py3.txt": "mock\n", "tests/data.txt": "not reqs\n"},
     ["test/requirements.txt", "tests/requirements-py3.txt"]),
    ({"requirements/base.txt": "six\n", "requirements/test.txt": "-r base.txt\nmock\n",
      "requirements/docs.txt": "sphinx\n", "requirements/development.txt": "-r test.txt\n"},
     ["requirements/base.txt", "requirements/development.txt", "requirements/test.txt"]),
])
def test_requirement_files_by_name_and_folder(tmp_path: Path, files: dict[str, str], requirements: list[str]) -> None:
    plan = plan_of(tmp_path, files)
    assert plan.requirements == requirements
    assert plan.read == requirements and not plan.reads_repo  # nested -r files are carried, not read from the repo
    assert "-r " + " -r ".join(requirements) in setup_script(plan)


def test_a_nested_requirements_file_travels_with_the_one_that_names_it(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"requirements-test.txt": "-r requirements/common.in\nmock\n",
                              "requirements/common.in": "six\n"})
    assert plan.requirements == ["requirements-test.txt"] and "requirements/common.in" in plan.files
    assert not plan.reads_repo
    outside = plan_of(tmp_path / "2", {"requirements-test.txt": "-r ../elsewhere.txt\n"})
    assert outside.reads_repo


def test_tox_deps_unconditional_substituted_and_with_files_and_extras(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {
        "setup.py": "from setuptools import setup\nsetup(name='p', extras_require={'docs': ['sphinx']})\n",
        "requirements/ci.txt": "coverage\n",
        "tox.ini": "[tox]\nenvlist = py27, py39\n[base]\ndeps =\n    pytest>=4\n    hypothesis\n"
                   "[testenv]\ndeps =\n    {[base]deps}\n    mock  # for py2 and py3\n    py27: unittest2\n"
                   "    -r{toxinidir}/requirements/ci.txt\n    -e .[tests]\n    {env:EXTRA_DEP}\n"})
    assert plan.loose == [("pytest>=4", "tox.ini [testenv] deps"), ("hypothesis", "tox.ini [testenv] deps"),
                          ("mock", "tox.ini [testenv] deps")]
    assert plan.requirements == ["requirements/ci.txt"]  # a -r in tox's deps installs that file
    assert plan.extras == ["tests"] and plan.installable
    assert plan.read == ["requirements/ci.txt", "tox.ini"]


def test_setup_cfg_and_setup_py_tests_require_and_extras_named_otherwise(tmp_path: Path) -> None:
    setup_py = ("from setuptools import setup\nTESTS = ['mock', 'nose']\n"
                "setup(name='p', tests_require=TESTS + ['pytest'],\n"
                "      extras_require={'testing_extra': ['freezegun'], 'docs': ['sphinx'], 'Dev': ['black']})\n")
    plan = plan_of(tmp_path, {"setup.py": setup_py,
                              "setup.cfg": "[metadata]\nname = p\n[options]\ntests_require =\n    responses\n"
                                           "[options.extras_require]\ntest-all =\n    tox\n"})
    assert plan.extras == ["test-all", "testing_extra", "Dev"]
    assert plan.loose == [("responses", "setup.cfg tests_require"), ("mock", "setup.py tests_require"),
                          ("nose", "setup.py tests_require"), ("pytest", "setup.py tests_require")]
    assert "-e '.[test-all,testing_extra,Dev]'" in setup_script(plan)
    assert plan.summary()["requirements"][0] == {"requirement": "-e .[test-all,testing_extra,Dev]",
                                                 "from": "setup.cfg, setup.py"}


def test_nox_sessions_named_for_tests(tmp_path: Path) -> None:
    noxfile = ("import nox\nDEPS = ['pytest', 'mock']\n\n@nox.session(python=['3.9'])\ndef tests(session):\n"
               "    session.install(*DEPS)\n    session.install('-r', 'requirements-nox.txt')\n"
               "    session.install('-e', '.[test]')\n    session.run('pytest')\n\n"
               "@nox.session(name='unit-fast')\ndef fast(session):\n    session.install('responses')\n\n"
               "@nox.session\ndef lint(session):\n    session.install('flake8')\n")
    plan = plan_of(tmp_path, {"noxfile.py": noxfile, "requirements-nox.txt": "six\n",
                              "pyproject.toml": "[project]\nname = 'p'\nversion = '1'\n"})
    assert plan.loose == [("pytest", "noxfile.py session tests"), ("mock", "noxfile.py session tests"),
                          ("responses", "noxfile.py session unit-fast")]
    assert plan.requirements == ["requirements-nox.txt"] and plan.extras == ["test"]


def test_dependency_groups_with_includes(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"pyproject.toml": "[dependency-groups]\ntyping = ['mypy']\n"
                              "test = ['pytest', {include-group = 'typing'}, {include-group = 'test'}]\n"
                              "docs = ['sphinx']\n"})
    assert plan.loose == [("pytest", "pyproject.toml [dependency-groups] test"),
                          ("mypy", "pyproject.toml [dependency-groups] test")]
    assert not plan.installable  # a pyproject with only dependency groups builds nothing


def test_the_origins_name_where_each_project_comes_from(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"requirements-dev.txt": "Mock==5.1\n", "tox.ini": "[testenv]\ndeps = mock\n"})
    assert plan.origins == {"mock": ["requirements-dev.txt, line 1", "tox.ini [testenv] deps"]}


def test_single_requirements_count_in_the_key(tmp_path: Path) -> None:
    one = plan_of(tmp_path / "1", {"tox.ini": "[testenv]\ndeps = mock\n"})
    two = plan_of(tmp_path / "2", {"tox.ini": "[testenv]\ndeps = mock==5.1\n"})
    same = plan_of(tmp_path / "3", {"tox.ini": "[flake8]\nmax-line-length = 99\n[testenv]\ndeps = mock\n"})
    assert env_key(one, "sha256:b") != env_key(two, "sha256:b")
    assert env_key(one, "sha256:b") == env_key(same, "sha256:b")  # tox.ini's other settings are not read


@pytest.mark.docker
def test_old_code_whose_tests_need_mock_from_tox_deps_reaches_a_verified_fix(
        tmp_path: Path, python_image: Callable[[str], str]) -> None:
    """On Python 3.9 (Debian bullseye's pip 20.3), with the real package index: without `mock` the tests do not
    even import, so the crash would not reproduce."""
    python_image("3.9")
    legacy = Path(__file__).parents[1] / "data" / "pythons" / "legacy"
    files = {p.relative_to(legacy).as_posix(): p.read_text() for p in legacy.rglob("*") if p.is_file()}
    files["tox.ini"] += "\n[testenv]\ndeps =\n    mock\n    py27: unittest2\n"
    files["tests/check_windows.py"] = "import mock\n\n" + files["tests/check_windows.py"] + (
        "\n\ndef test_a_mock():\n    assert mock.sentinel.a is mock.sentinel.a\n")
    repo = make_repo(tmp_path / "legacy", files)
    result = run_job(JobSpec(repo=str(repo), traceback=TRACEBACK, test_command="python -m pytest -q tests",
                             engine="offline", trace_dir=tmp_path / "runs"))
    try:
        assert (result.status, result.reason) == ("verified", "verified"), result.message
        assert result.provenance is not None and result.provenance["python"]["version"].startswith("3.9.")
        setup = result.provenance["setup"]
        assert setup["files"] == ["tox.ini"] and setup["command"] is None
        assert {"requirement": "mock", "from": "tox.ini [testenv] deps"} in setup["requirements"]
        assert any(name.startswith("mock==") for name in setup["installed"]), setup["installed"]
        report = render(analyze_file(Path(result.trace or "")))  # `patcher trace RUN`
        assert "\npython: 3.9." in report and "(tested (setup.cfg, tox.ini))\n" in report, report
        assert "\nsetup: read tox.ini; installed mock (tox.ini [testenv] deps); the environment holds mock==" in report
    finally:
        with suppress(docker.errors.APIError):
            docker.from_env().images.remove(result.provenance["image"] if result.provenance else "none")
