"""An environment image's venv is not the box user's to change, even when the repo's build code tries to leave
it open: boxes run with a writable root filesystem, so only permissions keep what they write off the host's
disk (patcher/sandbox/hardening.py, patcher/env/seal.py). Real Docker, real index, the clock repository of
tests/support/envs.py."""

from __future__ import annotations

from pathlib import Path

import docker
import docker.errors
import pytest

from patcher.config import SANDBOX_UID, SandboxConfig
from patcher.env import EnvConfig, ensure_env_image
from patcher.env.plan import VENV
from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest
from tests.support.envs import TEST_REPOSITORY, clock_files, remove_test_images, staged_repo
from tests.support.rootfs import PROBE, assert_nothing_writable, probe

OPENS_IT = (f"pip install -e '.[test]'; chmod 777 {VENV} /workspace; touch {VENV}/open; chmod 4777 {VENV}/open; "
            f"chmod 600 {VENV}/pyvenv.cfg; (while :; do chmod 777 {VENV}/lib; done) >/dev/null 2>&1 &")
"""A setup that leaves its venv writable by all, a set-id file, a file only it may read, and a process that
keeps opening a directory while the setup's last steps run."""


@pytest.mark.docker
def test_a_setup_that_leaves_its_venv_open_gives_the_box_nothing_to_write(
        docker_client: docker.DockerClient, sandbox_image: str, tmp_path: Path) -> None:
    config = EnvConfig(repository=TEST_REPOSITORY, home=tmp_path / "home", setup_timeout_s=300)
    remove_test_images(docker_client, config)
    staged = staged_repo(tmp_path / "clock", clock_files())
    try:
        tag = ensure_env_image(staged, OPENS_IT, config, docker_client, print)
        image = docker_client.images.get(tag)
        assert image.attrs["Config"]["User"] == f"{SANDBOX_UID}:{SANDBOX_UID}"
        setup_commit = image.attrs["Parent"]  # the setup's own commit, before the seal
        with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
            facts = probe(box, PROBE)
            run = box.call(RunTestRequest("python -m pytest -q"))
        assert facts["prefix"] == VENV
        assert_nothing_writable(facts)
        assert run.exit_code == 1 and "1 failed, 2 passed" in run.output, run.output  # the venv still works
        remove_test_images(docker_client, config)
        with pytest.raises(docker.errors.ImageNotFound):  # the setup's commit went with the image
            docker_client.images.get(setup_commit)
    finally:
        staged.cleanup()
        remove_test_images(docker_client, config)
