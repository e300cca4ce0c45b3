"""The tool server holds the signing key, so no code of the repository or of the environment runs in it:
modules it imports after the repo is copied in (importlib.metadata's helpers, traceback) come from the
standard library even when the repo's root has files of those names, and .pth files are read as data."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from patcher.intake import stage_repo
from patcher.sandbox import DockerSandbox
from sandbox.installed import pth_dirs
from sandbox.protocol import ModulesRequest, ReadFileRequest
from tests.support.boxes import config
from tests.support.helpers import make_repo

PLANT = "import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), {marker!r}), 'w').write('ran')\n"
SHADOWS = {  # stdlib names the server imports late, each spelled another way: a module, a package, a stub
    "csv.py": "csv", "email/__init__.py": "email", "zipfile.py": "zipfile", "traceback.py": "traceback",
    "pathlib/__init__.py": "pathlib", "argparse.py": "argparse",
}


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_repo_files_named_like_the_standard_library_never_run_in_the_server(
        tmp_path: Path, sandbox_image: str, docker_client: docker.DockerClient) -> None:
    files = {path: PLANT.format(marker=f"../RAN-{name}") if "/" in path else PLANT.format(marker=f"RAN-{name}")
             for path, name in SHADOWS.items()}
    staged = stage_repo(str(make_repo(tmp_path / "repo", {**files, "test_ok.py": "def test_ok():\n    pass\n"})))
    try:
        with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
            modules = box.call(ModulesRequest())
            assert not modules.is_error, modules.output
            assert {"pytest", "pluggy"} <= set(modules.data["modules"])  # the site directories were scanned
            for name in SHADOWS.values():
                got = box.call(ReadFileRequest(f"RAN-{name}"))
                assert got.is_error, f"the repo's {name} ran in the tool server"
    finally:
        staged.cleanup()


def test_pth_files_give_their_directories_and_never_run(tmp_path: Path) -> None:
    (tmp_path / "extra").mkdir()
    marker = tmp_path / "ran"
    (tmp_path / "x.pth").write_text(f"# a comment\nextra\nmissing\nimport os; open({str(marker)!r}, 'w')\n"
                                    f"import\tos; open({str(marker)!r}, 'w')\n")
    assert pth_dirs(str(tmp_path / "x.pth"), str(tmp_path)) == [str(tmp_path / "extra")]
    assert not marker.exists()


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_the_modules_list_is_the_images_asked_once(tmp_path: Path, sandbox_image: str,
                                                   docker_client: docker.DockerClient) -> None:
    """The list depends on the image alone (the server reads only its site directories), so a job's second
    box of the same image gets the first answer (its server is not asked: the same duration comes back)."""
    one = stage_repo(str(make_repo(tmp_path / "one", {"a.py": "x = 1\n"})))
    two = stage_repo(str(make_repo(tmp_path / "two", {"csv.py": PLANT.format(marker="RAN-csv")})))
    try:
        answers = []
        for staged in (one, two):
            with DockerSandbox(staged, config(sandbox_image), client=docker_client) as box:
                answers.append(box.call(ModulesRequest()))
        assert answers[0].data == answers[1].data and answers[0].duration_ms == answers[1].duration_ms
        assert answers[1] is not answers[0]
    finally:
        one.cleanup()
        two.cleanup()
