"""A failing dependency setup says why: the requirement pip stopped at, the file that named it, and what the
index answered (its URL without credentials). Real pip in real setup containers, against the suite's real
index server (tests/support/private_servers.py) on the session's test host."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import pytest

from patcher.env import EnvConfig, ensure_env_image
from patcher.env.failure import explain
from patcher.env.plan import PIP_UPGRADE_FAILED, EnvPlan
from patcher.errors import SetupFailed
from patcher.intake import stage_repo
from tests.support.helpers import make_repo
from tests.support.netns import TestHost
from tests.support.private_servers import IndexHandler, Recorder, basic, build_wheel, serving, url_of

PASSWORD = "zqxv-" + os.urandom(8).hex()


@contextmanager
def index(tmp_path: Path, test_host: TestHost, **options: object) -> Iterator[Recorder]:
    wheels = tmp_path / "wheels"
    wheels.mkdir(exist_ok=True)
    build_wheel(wheels, "private-dep", "1.0", "SIZE = 10\n")
    with serving(IndexHandler, test_host, root=str(wheels), auth=basic("ci", PASSWORD), **options) as server:
        yield server


def failure(tmp_path: Path, client: docker.DockerClient, server: Recorder, files: dict[str, str],
            userinfo: str = f"ci:{PASSWORD}@") -> str:
    """The SetupFailed message of installing `files`' requirements from `server` (with these credentials)."""
    config = EnvConfig(repository="patcher-env-test", home=tmp_path / "home", setup_timeout_s=300,
                       index_url=url_of(server, "/simple").replace("http://", f"http://{userinfo}"),
                       extra_index_urls=[], trusted_hosts=[str(server.server_address[0])])
    staged = stage_repo(str(make_repo(tmp_path / "repo", {**files, "a.py": ""})))
    try:
        with pytest.raises(SetupFailed) as caught:
            ensure_env_image(staged, None, config, client, print)
    finally:
        staged.cleanup()
    message = str(caught.value)
    assert PASSWORD not in message and caught.value.reason == "setup_failed"
    return message


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_a_package_the_index_lacks_names_the_file_and_the_index(
        tmp_path: Path, docker_client: docker.DockerClient, test_host: TestHost) -> None:
    with index(tmp_path, test_host) as server:
        message = failure(tmp_path, docker_client, server,
                          {"tox.ini": "[testenv]\ndeps =\n    private-dep==1.0\n    private-missing\n"})
    assert (f"dependency setup failed (exit code 1): no distribution of `private-missing` (from tox.ini [testenv] "
            f"deps) could be installed: {url_of(server, '/simple')} offers no version of it at all: check the "
            "name, that the index serves it") in message, message


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_a_version_the_index_lacks_names_the_requirements_file_and_line(
        tmp_path: Path, docker_client: docker.DockerClient, test_host: TestHost) -> None:
    with index(tmp_path, test_host) as server:
        message = failure(tmp_path, docker_client, server, {"requirements-test.txt": "# pinned\nprivate-dep==2.0\n"})
    assert ("no distribution of `private-dep==2.0` (from requirements-test.txt, line 2) could be installed: none of "
            f"the versions {url_of(server, '/simple')} offers matches (1.0)") in message, message


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
@pytest.mark.parametrize(("refuse", "userinfo", "answer"), [
    (401, "ci:wrong@", "401 Unauthorized for {url}/private-dep/ with the credentials patcher added"),
    (401, "", "401 Unauthorized for {url}/private-dep/ without credentials (none configured for it)"),
    (403, "ci:wrong@", "403 Forbidden for {url}/private-dep/ with the credentials patcher added"),
])
def test_an_index_that_refuses_says_what_it_answered(
        tmp_path: Path, docker_client: docker.DockerClient, test_host: TestHost, refuse: int, userinfo: str,
        answer: str) -> None:
    with index(tmp_path, test_host, refuse=refuse) as server:
        message = failure(tmp_path, docker_client, server, {"requirements.txt": "private-dep==1.0\n"}, userinfo)
    url = url_of(server, "/simple")
    assert f"no distribution of `private-dep==1.0` (from requirements.txt, line 1) could be installed: {url}" in message
    assert "the index answered: " + answer.format(url=url) in message, message
    assert "wrong" not in message


def test_pip_messages_of_other_versions_are_read_too() -> None:
    plan = EnvPlan({}, loose=[("mock", "tox.ini [testenv] deps"), ("attrs>=30", "setup.py tests_require")],
                   origins={"attrs": ["setup.py tests_require"], "numpy": ["requirements.txt, line 1"]})
    pip23 = ("ERROR: Ignored the following versions that require a different python version: 2.1.0 Requires-Python "
             ">=3.10\nERROR: Could not find a version that satisfies the requirement numpy==2.1.0 (from -r "
             "requirements.txt (line 1)) (from versions: 1.26.4)\n")
    assert explain(pip23, plan, ["https://pypi.org/simple"], []) == (
        "no distribution of `numpy==2.1.0` (from requirements.txt, line 1) could be installed: the versions there "
        "require another Python (2.1.0 Requires-Python >=3.10)")
    pip20 = ("ERROR: Could not find a version that satisfies the requirement attrs>=30 (from -r "
             "/workspace/.patcher-setup/test-requirements.txt (line 2)) (from versions: 19.1.0, 19.2.0)\n"
             "ERROR: No matching distribution found for attrs>=30\n")
    assert explain(pip20, plan, ["https://pypi.org/simple"], []).startswith(
        "no distribution of `attrs>=30` (from setup.py tests_require) could be installed: none of the versions")
    conflict = ("ERROR: Cannot install attrs==19.1.0 and numpy==1.0 because these package versions have "
                "conflicting dependencies.\n")
    assert explain(conflict, plan, [], []) == ("the requirements conflict: `attrs==19.1.0` (from setup.py "
                                               "tests_require); `numpy==1.0` (from requirements.txt, line 1) cannot be "
                                               "installed together")
    assert explain("  error: subprocess-exited-with-error\n  Collecting numpy==1.0\n  × Getting requirements to "
                   "build wheel did not run successfully.\n", plan, [], []).startswith(
        "building `numpy==1.0` (from requirements.txt, line 1) failed")
    legacy = ("      pkg_resources.ContextualVersionConflict: (packaging 20.9 (/usr/lib/python3/dist-packages), "
              "Requirement.parse('packaging>=26.2'), {'vcs-versioning'})\n  ERROR: Command errored out with exit "
              "status 1: /opt/patcher-env/bin/python /tmp/x_in_process.py prepare_metadata_for_build_wheel /tmp/y "
              "Check the logs for full command output.\n")  # humanize 2.0.0's setup_requires on bullseye's pip
    assert explain(legacy, plan, [], []).startswith(
        "the project's build code needs `packaging>=26.2` (for `vcs-versioning`) and the environment has packaging "
        "20.9: its setup.py ran on the image's setuptools without build isolation")
    assert explain("Successfully installed nothing\n", plan, [], []) == ""


def test_a_conflict_with_a_single_requirement_names_its_line_in_the_users_file_not_patchers(tmp_path: Path) -> None:
    from patcher.env.plan import detect

    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='p', extras_require="
                                       "{'test': ['pytest-zz>=99']})\n")
    (tmp_path / "tox.ini").write_text("[testenv]\ndeps = flake8==3.6.0\n")
    plan = detect(tmp_path, None, ["test"])
    assert plan is not None
    conflict = ("ERROR: Cannot install -r /workspace/.patcher-setup/test-requirements.txt (line 1) and p==0.0.0 "
                "because these package versions have conflicting dependencies.\n")
    assert explain(conflict, plan, [], []) == ("the requirements conflict: `flake8==3.6.0` (from tox.ini [testenv] "
                                               "deps); `p==0.0.0` cannot be installed together")
    missing = "ERROR: No matching distribution found for pytest-zz>=99\n"
    assert explain(missing, plan, [], []).startswith("no distribution of `pytest-zz>=99` (from setup.py extra [test])")


def test_an_install_on_the_images_old_pip_says_so() -> None:
    """An old pip is upgraded first (plan.setup_script); when the index has no pip, the install goes on with the
    image's, whose builds run a setup.py on the image's setuptools: a failure then names that."""
    plan = EnvPlan({})
    install_layout = (f"{PIP_UPGRADE_FAILED}\n  File \"/usr/lib/python3/dist-packages/setuptools/command/"
                      "install_lib.py\"\n      AttributeError: install_layout\n")  # semver 2.10 on bullseye's pip
    assert explain(install_layout, plan, [], []) == (
        "the image's pip (older than 21.3) installed, as the index offered no newer pip: it builds a project's "
        "setup.py on the image's setuptools")
    conflict = (f"{PIP_UPGRADE_FAILED}\nERROR: Cannot install attrs==19.1.0 and six==1.0 because these package "
                "versions have conflicting dependencies.\n")
    assert explain(conflict, plan, [], []).startswith("the requirements conflict: `attrs==19.1.0`")
    assert explain(conflict, plan, [], []).endswith(" (the image's pip (older than 21.3) installed, as the index "
                                                    "offered no newer pip: it builds a project's setup.py on the "
                                                    "image's setuptools)")
    assert explain(conflict.replace(PIP_UPGRADE_FAILED, ""), plan, [], []).endswith("cannot be installed together")
