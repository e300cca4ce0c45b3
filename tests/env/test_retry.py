"""A setup whose one pip run fails is installed again as the project's own tooling would (retry.py): the single
requirements first as tox installs deps, then the project, whose own requirements win (a pin they contradict is a
warning naming its line); a setup.py project on its era's setuptools. The readers on the host, and real setups."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from patcher.env import EnvConfig, ensure_env_image, setup_of
from patcher.env.retry import RETRY_MARK, conflict_warning, retried_in
from patcher.errors import SetupFailed
from patcher.intake import stage_repo
from tests.support.helpers import make_repo

LOOSE = [("flake8==3.6.0", "tox.ini [testenv] deps"), ("pytest", "tox.ini [testenv] deps")]
PIP_SAYS = ("flake8 3.6.0 requires pycodestyle<2.5.0,>=2.4.0, but you have pycodestyle 2.15.0 which is "
            "incompatible.")


def test_a_conflict_pip_reports_is_told_as_the_users_own_line() -> None:
    said = conflict_warning(PIP_SAYS, LOOSE)
    assert said.startswith("`flake8==3.6.0` (tox.ini [testenv] deps) was installed before the project, as tox "
                           "installs deps, and the project's own requirements then won: flake8 3.6.0 requires "
                           "pycodestyle<2.5.0,>=2.4.0, but the environment has pycodestyle 2.15.0"), said
    assert "--setup" in said and "[tool.patcher] setup" in said
    assert conflict_warning("something else", LOOSE) == "something else"


def test_the_retry_report_is_read_from_the_setup_output() -> None:
    report = {"steps": [{"command": "pip install flake8==3.6.0 pytest", "why": "w", "exit_code": 0}],
              "warnings": [PIP_SAYS], "dropped": []}
    log = f"Collecting x\n{RETRY_MARK} {json.dumps(report)}\npatcher: the editable project's directories\n"
    found = retried_in(log, LOOSE)
    assert found is not None and found["steps"] == report["steps"]
    assert found["warnings"][0].startswith("`flake8==3.6.0` (tox.ini [testenv] deps)")
    assert retried_in("Successfully installed x\n", LOOSE) is None
    assert retried_in(f"{RETRY_MARK} not json\n", LOOSE) is None


PROJECT = {
    "mylib/__init__.py": "def double(x):\n    return x * 2\n",
    "setup.py": "from setuptools import setup\nsetup(name='mylib', version='1.0', packages=['mylib'], "
                "install_requires=['pycodestyle>=2.5'])\n",
    "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ndeps = flake8==3.6.0\n    pytest\ncommands = pytest\n",
}


def _env(tmp_path: Path, files: dict[str, str], image: str, client: docker.DockerClient) -> str:
    staged = stage_repo(str(make_repo(tmp_path / "repo", files)))
    try:
        return ensure_env_image(staged, None, EnvConfig(base_image=image), client, print)
    finally:
        staged.cleanup()


@pytest.mark.docker
def test_a_tox_deps_pin_the_project_contradicts_is_a_warning_not_a_failure(
        tmp_path: Path, sandbox_image: str, docker_client: docker.DockerClient) -> None:
    setup = setup_of(docker_client, _env(tmp_path, PROJECT, sandbox_image, docker_client))
    assert setup is not None
    assert [(c["command"], c.get("exit_code")) for c in setup["commands"]] == [
        ("pip install -r /workspace/.patcher-setup/test-requirements.txt -e .", 1),
        ("pip install flake8==3.6.0 pytest", 0), ("pip install -e .", 0)]
    assert len(setup["warnings"]) == 1 and setup["warnings"][0].startswith(
        "`flake8==3.6.0` (tox.ini [testenv] deps) was installed before the project"), setup["warnings"]
    assert "flake8==3.6.0" in setup["installed"]
    assert not any(p.startswith("pycodestyle==2.4") for p in setup["installed"])  # the project's requirement won


@pytest.mark.docker
def test_a_deps_line_that_installs_nowhere_still_fails_naming_its_line_and_the_override(
        tmp_path: Path, sandbox_image: str, docker_client: docker.DockerClient) -> None:
    files = {**PROJECT, "tox.ini": PROJECT["tox.ini"].replace("    pytest\n", "    patcher-no-such-dist-zz==1.0\n")}
    with pytest.raises(SetupFailed) as failed:
        _env(tmp_path, files, sandbox_image, docker_client)
    message = str(failed.value)
    assert "`patcher-no-such-dist-zz==1.0` (from tox.ini [testenv] deps)" in message, message
    assert '--setup "CMD" (or [tool.patcher] setup in pyproject.toml)' in message
    assert failed.value.setup is not None and failed.value.interpreter is None
    assert [c["command"] for c in failed.value.setup["commands"]][-1] == "pip install patcher-no-such-dist-zz==1.0"


ERA = {
    "oldlib/__init__.py": "VALUE = 1\n",
    "setup.py": "import pkg_resources\nfrom setuptools import setup\n\n"
                "setup(name='oldlib', version='0.1', packages=['oldlib'],\n"
                "      classifiers=['Programming Language :: Python :: 2.7',\n"
                "                   'Programming Language :: Python :: 3.5'])\n",
    "requirements.txt": "six\n",
}


@pytest.mark.docker
def test_a_setup_py_of_its_era_is_built_on_its_eras_setuptools_when_todays_build_fails(
        tmp_path: Path, python_image: Callable[[str], str], docker_client: docker.DockerClient) -> None:
    """Today's setuptools has no `pkg_resources`, which old setup.py files import: the isolated editable build
    (pip on 3.13 builds PEP 660 editables on the newest setuptools) fails getting its requirements."""
    setup = setup_of(docker_client, _env(tmp_path, ERA, python_image("3.13"), docker_client))
    assert setup is not None
    ran = [(c["command"], c.get("exit_code")) for c in setup["commands"]]
    assert ran == [("pip install -r requirements.txt -e .", 1),
                   ("pip install setuptools<72 wheel", 0),
                   ("pip install --no-build-isolation -r requirements.txt -e .", 0)], ran
    assert setup["warnings"] == []
