"""A pytest plugin the setup installs that no longer imports is uninstalled, and the setup says so.

The wheels are made here (no index): `broken-plug` imports a module that is not there (as pytest-travis-fold
1.3.0's `py.builtin` is not, once a newer pytest's `py` shim shadows the `py` library), `fine-plug` imports and
gives a fixture; both declare a `pytest11` entry point.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import docker
import pytest

from patcher.config import SANDBOX_IMAGE, SandboxConfig
from patcher.env import EnvConfig, ensure_env_image, prune, setup_of
from patcher.env.plan import SETUP_DIR, detect, setup_script
from patcher.env.plugins import DROPPED_MARK, SCRIPT_NAME, describe, dropped_in
from patcher.intake import stage_repo
from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest
from tests.support.helpers import make_repo


def wheel(into: Path, name: str, module: str, body: str) -> str:
    """A pure wheel of `name` 1.0 holding `module`.py, registered as a pytest11 plugin; its file name."""
    dist = name.replace("-", "_")
    files = {f"{module}.py": body,
             f"{dist}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{dist}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                            "Tag: py3-none-any\n",
             f"{dist}-1.0.dist-info/entry_points.txt": f"[pytest11]\n{module} = {module}\n"}
    record = "".join(f"{path},sha256={_digest(text)},{len(text.encode())}\n" for path, text in files.items())
    filename = f"{dist}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(into / filename, "w") as zf:
        for path, text in {**files, f"{dist}-1.0.dist-info/RECORD": record + f"{dist}-1.0.dist-info/RECORD,,\n"
                           }.items():
            zf.writestr(path, text)
    return filename


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def test_the_setup_runs_the_check_after_the_install_and_before_it_reports(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("pytest-travis-fold\n")
    plan = detect(tmp_path, None, ["test"])
    assert plan is not None
    lines = setup_script(plan).splitlines()
    check = next(n for n, line in enumerate(lines) if line.endswith(f"{SETUP_DIR}/{SCRIPT_NAME}"))
    install = next(n for n, line in enumerate(lines) if "pip install -r requirements.txt" in line)
    report = next(n for n, line in enumerate(lines) if "PATCHER-INSTALLED" in line)
    assert install < check < report


def test_dropped_plugins_are_read_with_where_they_were_asked_for() -> None:
    log = (f"noise\n{DROPPED_MARK} "
           '[{"name": "pytest_travis-fold", "version": "1.3.0", "plugin": "travis-fold", '
           '"error": "ModuleNotFoundError: No module named \'py.builtin\'"}]\nPATCHER-INSTALLED x==1\n')
    dropped = dropped_in(log, {"pytest-travis-fold": ["tox.ini [testenv] deps"]})
    assert dropped == [{"name": "pytest_travis-fold", "version": "1.3.0", "plugin": "travis-fold",
                        "error": "ModuleNotFoundError: No module named 'py.builtin'",
                        "from": "tox.ini [testenv] deps"}]
    assert describe(dropped) == ("pytest_travis-fold 1.3.0 (tox.ini [testenv] deps): its pytest plugin does not "
                                 "import (ModuleNotFoundError: No module named 'py.builtin'), uninstalled")
    assert dropped_in("PATCHER-INSTALLED x==1\n", {}) == []


@pytest.mark.docker
def test_a_plugin_that_does_not_import_is_uninstalled_and_pytest_runs(
        docker_client: docker.DockerClient, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "wheels").mkdir(parents=True)
    broken = wheel(repo / "wheels", "broken-plug", "broken_plug", "from patcher_gone_zq9.builtin import _basestring\n")
    fine = wheel(repo / "wheels", "fine-plug", "fine_plug",
                 "import pytest\n\n@pytest.fixture\ndef fine():\n    return 42\n")
    make_repo(repo, {"requirements.txt": f"broken-plug @ file:///workspace/repo/wheels/{broken}\n"  # and the wheels
                                         f"fine-plug @ file:///workspace/repo/wheels/{fine}\n",
                     "test_it.py": "def test_it(fine):\n    assert fine == 42\n"})
    staged = stage_repo(str(repo))
    config = EnvConfig(base_image=SANDBOX_IMAGE, repository="patcher-env-test-plugins",
                       home=tmp_path / "home", setup_timeout_s=300)
    logged: list[str] = []
    try:
        tag = ensure_env_image(staged, None, config, docker_client, logged.append)
        setup = setup_of(docker_client, tag)
        assert setup is not None
        assert [(d["name"], d["plugin"], d["from"]) for d in setup["dropped"]] == [
            ("broken-plug", "broken_plug", "requirements.txt, line 1")]
        assert "No module named 'patcher_gone_zq9'" in setup["dropped"][0]["error"]
        assert any("broken-plug 1.0" in line and "uninstalled" in line for line in logged), logged
        assert "fine-plug==1.0" in setup["installed"] and "broken-plug==1.0" not in setup["installed"]
        with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
            run = box.call(RunTestRequest("python -m pytest -q test_it.py"))
        assert run.exit_code == 0, run.output
    finally:
        staged.cleanup()
        prune(docker_client, config, remove_all=True)
