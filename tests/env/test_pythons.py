"""Each repository on its own Python, for real: code that imports what Python 3.10 removed runs on 3.9, code
in 3.12's syntax on 3.12 or later, each to a verified fix; a Python this machine cannot have is setup_failed.

The images are built once per session (tests/conftest.py `python_image`): offline, from Debian bullseye and
trixie, a minute or more each the first time on a machine.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from patcher.config import DEFAULT_PYTHON, SandboxConfig
from patcher.env import EnvConfig, ensure_env_image
from patcher.env.image import sandbox_tag
from patcher.intake import stage_repo
from patcher.pipeline import JobSpec, run_job, verify_patch
from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest
from tests.support.helpers import git, make_repo

DATA = Path(__file__).parents[1] / "data" / "pythons"
PATCHER = str(Path(__file__).resolve().parents[2] / ".venv/bin/patcher")
TEST = "python -m pytest -q tests/check_windows.py"
BUG, FIX = "for i in range(len(items))]", "for i in range(len(items) - 1)]"

pytestmark = pytest.mark.docker


def files_of(name: str) -> dict[str, str]:
    root = DATA / name
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def run_in(image: str, repo: Path, client: docker.DockerClient) -> str:
    staged = stage_repo(str(repo))
    try:
        with DockerSandbox(staged, SandboxConfig(image=image, test_timeout_s=120), client) as box:
            return box.call(RunTestRequest(TEST)).output
    finally:
        staged.cleanup()


def events(trace: str | None, kind: str) -> list[dict[str, Any]]:
    assert trace
    return [e for e in map(json.loads, Path(trace).read_text().splitlines()) if e["type"] == kind]


def test_code_of_the_collections_mapping_years_runs_on_python_39_to_a_verified_fix(
        tmp_path: Path, python_image: Callable[[str], str], sandbox_image: str,
        docker_client: docker.DockerClient) -> None:
    old = python_image("3.9")
    repo = make_repo(tmp_path / "legacy", files_of("legacy"))
    on_39 = run_in(old, repo, docker_client)
    assert "1 failed, 1 passed" in on_39 and "IndexError" in on_39, on_39
    if DEFAULT_PYTHON != "3.9":  # the default image's Python cannot even import the module
        assert "cannot import name 'Mapping' from 'collections'" in run_in(sandbox_image, repo, docker_client)
    result = run_job(JobSpec(repo=str(repo), traceback=on_39, engine="offline", trace_dir=tmp_path / "runs"))
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.diff and f"+    return [(items[i], items[i + 1]) {FIX}" in result.diff
    assert result.provenance is not None
    python = result.provenance["python"]
    assert python["version"].startswith("3.9.") and python["image"] == old == sandbox_tag("3.9")
    assert python["source"] == "tested (setup.cfg, tox.ini)"  # classifiers and envlist up to 3.8: the next one
    assert python["declared"] == {"tested": ["2.7", "3.6", "3.7", "3.8"], "files": {"tested": "setup.cfg, tox.ini"}}
    assert events(result.trace, "environment")[0]["python"] == python
    assert events(result.trace, "settings")[0]["python"] is None  # nothing asked: chosen from the files


def test_code_in_the_syntax_of_python_312_runs_on_a_python_that_parses_it(
        tmp_path: Path, python_image: Callable[[str], str], docker_client: docker.DockerClient) -> None:
    new = python_image("3.13")  # offline, 3.13 (trixie) is the one; with a registry, 3.12 is nearer the default
    repo = make_repo(tmp_path / "modern", files_of("modern"))
    on_313 = run_in(new, repo, docker_client)
    assert "1 failed, 1 passed" in on_313 and "IndexError" in on_313, on_313
    result = run_job(JobSpec(repo=str(repo), traceback=on_313, engine="offline", trace_dir=tmp_path / "runs"))
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.provenance is not None
    python = result.provenance["python"]
    version = tuple(int(n) for n in python["version"].split(".")[:2])
    assert version >= (3, 12) and python["image"] == sandbox_tag(".".join(map(str, version)))
    assert python["source"] == "requires-python (pyproject.toml)"


@pytest.mark.usefixtures("sandbox_image")
@pytest.mark.parametrize(("files", "needle"), [
    ({"pyproject.toml": '[project]\nname = "future"\nrequires-python = ">=3.15"\n'},
     "the repository requires Python >=3.15 (pyproject.toml) and this machine can provide only "),
    ({"pyproject.toml": '[tool.patcher]\npython = "3.8"\n'},
     "Python 3.8 ([tool.patcher] python) is not one this machine can provide ("),
])
def test_a_python_this_machine_cannot_have_is_setup_failed(tmp_path: Path, files: dict[str, str],
                                                           needle: str) -> None:
    repo = make_repo(tmp_path / "repo", {**files, "app.py": "x = 1\n"})
    crash = 'Traceback (most recent call last):\n  File "app.py", line 1, in <module>\nValueError: x\n'
    result = run_job(JobSpec(repo=str(repo), traceback=crash, test_command="python app.py", engine="offline",
                             trace_dir=tmp_path / "runs"))
    assert (result.reason, result.exit_code) == ("setup_failed", 3)
    assert needle in result.message, result.message


def test_verify_takes_python_and_setup_flags(tmp_path: Path, python_image: Callable[[str], str],
                                             docker_client: docker.DockerClient) -> None:
    old = python_image("3.9")
    files = files_of("legacy")
    files["setup.cfg"] = files["setup.cfg"].replace("Python :: 3.8", "Python :: 3.10")  # would choose 3.11
    repo = make_repo(tmp_path / "legacy", files)
    windows = repo / "legacy/windows.py"
    windows.write_text(windows.read_text().replace(BUG, FIX))
    (tmp_path / "fix.diff").write_text(git(repo, "diff") + "\n")
    git(repo, "checkout", "--", ".")
    env = {**os.environ, "PATCHER_HOME": str(tmp_path / "home")}
    setup = "python -c \"import sys; open('/opt/patcher-env/marker', 'w').write(sys.version)\""
    out = subprocess.run([PATCHER, "verify", str(repo), "--patch", str(tmp_path / "fix.diff"), "--test", TEST,
                          "--python", "3.9", "--setup", setup, "--json"],
                         capture_output=True, text=True, timeout=600, env=env)
    result = json.loads(out.stdout)
    environment = events(result["trace"], "environment")[0]
    try:
        assert (out.returncode, result["status"]) == (0, "verified"), out.stderr
        assert result["provenance"]["python"]["source"] == "--python"
        assert result["provenance"]["python"]["image"] == old
        assert environment["base_image"] == old and environment["image"].startswith("patcher-env:")
        assert events(result["trace"], "settings")[0]["python"] == "3.9"
        assert events(result["trace"], "settings")[0]["setup"] == setup
    finally:
        with suppress(docker.errors.APIError):
            docker_client.images.remove(environment["image"])
    bad = subprocess.run([PATCHER, "verify", str(repo), "--patch", str(tmp_path / "fix.diff"), "--python", "3"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "--python must name a version as X.Y, such as 3.9, not '3'" in bad.stderr


NEWER_SETUPTOOLS = {  # builds only where its [build-system] is what runs its setup.py, not the image's setuptools
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
    "setup.py": "import setuptools\nassert int(setuptools.__version__.split('.')[0]) >= 61, setuptools.__file__\n"
                "setuptools.setup(name='newer', version='1', py_modules=['newer'])\n",
    "newer.py": "X = 1\n"}


@pytest.mark.parametrize("setup", [None, "pip install -e ."])
def test_a_setup_py_project_builds_on_python_39_with_what_it_declares(
        tmp_path: Path, python_image: Callable[[str], str], docker_client: docker.DockerClient,
        setup: str | None) -> None:
    """Bullseye's pip 20.3 leaks the image's setuptools 52 into an isolated build in the environment's venv
    (pypa/pip#6264): the project's [build-system] (or its setup_requires) is not what runs its setup.py, and the
    install fails. An old pip is upgraded first, for the files' install and for a setup command alike."""
    config = EnvConfig(base_image=python_image("3.9"), repository="patcher-env-test", home=tmp_path / "home",
                       setup_timeout_s=300)
    staged = stage_repo(str(make_repo(tmp_path / "newer", NEWER_SETUPTOOLS)))
    try:
        tag = ensure_env_image(staged, setup, config, docker_client, print)
    finally:
        staged.cleanup()
    try:
        probe = "import importlib.metadata as m, pip; print(m.version('newer'), pip.__version__)"
        out = docker_client.containers.run(tag, ["/opt/patcher-env/bin/python", "-c", probe], remove=True,
                                           network_disabled=True).decode().split()
        assert out[0] == "1" and tuple(map(int, out[1].split(".")[:2])) >= (21, 3), out
    finally:
        with suppress(docker.errors.APIError):
            docker_client.images.remove(tag)


def test_doctor_names_each_python_built_and_those_this_machine_can_have(python_image: Callable[[str], str]) -> None:
    from patcher.doctor import run_doctor

    python_image("3.9")
    line = next(c.line() for c in run_doctor()[0] if c.name == "pythons")
    assert line.startswith("ok    pythons: ") and f"in {sandbox_tag('3.9')} (current)" in line, line
    assert "offline, from Debian: 3.9 (bullseye, base built), 3.11 (bookworm" in line or "with the registry" in line


def test_a_python_that_cannot_import_the_project_is_left_for_the_next_one_and_the_result_says_why(
        tmp_path: Path, python_image: Callable[[str], str], sandbox_image: str) -> None:
    """Tested on 3.10 and 3.12, which this machine has not: 3.11 between them is chosen, where
    `collections.Mapping` is gone; the base run fails importing it, not with the crash, and the next Python (3.9,
    as near as 3.13 and older) takes the job."""
    old = python_image("3.9")
    files = files_of("legacy")
    files["tox.ini"] = "[tox]\nenvlist = py310, py312\n"
    files["setup.cfg"] = "\n".join(line for line in files["setup.cfg"].splitlines()
                                   if ":: 2.7" not in line and ":: 3.6" not in line and ":: 3.7" not in line
                                   ).replace("Python :: 3.8", "Python :: 3.12") + "\n"
    repo = make_repo(tmp_path / "legacy", files)
    windows = repo / "legacy/windows.py"
    windows.write_text(windows.read_text().replace(BUG, FIX))
    diff = git(repo, "diff") + "\n"
    git(repo, "checkout", "--", ".")
    crash = ('Traceback (most recent call last):\n  File "legacy/windows.py", line 10, in windows\n'
             "    return [(items[i], items[i + 1]) for i in range(len(items))]\nIndexError: list index out of range\n")
    result = verify_patch(str(repo), diff, test_command=TEST, traceback=crash, trace_dir=tmp_path / "runs")
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.provenance is not None
    python = result.provenance["python"]
    assert python["image"] == old and python["source"].startswith("next after 3.11, which was left (tested ")
    (left,) = python["tried"]
    if DEFAULT_PYTHON == "3.11":
        assert left["image"] == sandbox_image
    assert left["version"].startswith("3.11") and left["source"].startswith("tested (")
    assert left["left"] == ("the base run failed there for the interpreter: `cannot import name 'Mapping' from "
                            "'collections'`"), left
    assert [e["base_image"] for e in events(result.trace, "environment")] == [left["image"], old]


def test_a_result_that_is_not_verified_still_says_what_it_ran_on(tmp_path: Path, sandbox_image: str) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n", "requirements.txt": "patcher-no-such-dist-zz==1\n",
                                         "setup.cfg": "[metadata]\nname = app\n"})
    crash = ('Traceback (most recent call last):\n  File "/usr/lib/python3.13/runpy.py", line 1, in _run\n'
             '  File "app.py", line 1, in <module>\nValueError: x\n')
    result = run_job(JobSpec(repo=str(repo), traceback=crash, test_command="python app.py", engine="offline",
                             trace_dir=tmp_path / "runs"))
    assert result.reason == "setup_failed" and result.provenance is not None
    prov = result.provenance
    assert prov["repo"] == str(repo) and prov["tree"] and prov["source_commit"] == result.base_commit
    assert prov["python"]["source"] == "the crash's Python (3.13, from the traceback's paths)"
    assert prov["setup"]["requirements"] == [{"requirement": "-r requirements.txt", "from": "requirements.txt"}]
    assert prov["setup"]["commands"][0] == {"command": "pip install -r requirements.txt",
                                            "why": "everything in one run"}
    assert prov["reproduction"] == {"command": "python app.py", "source": "user"}
    assert "tried" not in prov["python"]  # a missing distribution is no reason to try another Python
