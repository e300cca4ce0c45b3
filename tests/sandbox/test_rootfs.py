"""A box's root filesystem is writable, as a host's is (a read-only one was a signal code under test could read),
and still nothing the box user can write lands on the host's disk: the user may write nowhere on the root
filesystem, and each place it may write is a tmpfs whose size bounds what it takes.

The environment image's venv (installed by another user, then sealed) is checked in tests/env/test_seal.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from patcher.intake import StagedRepo
from patcher.sandbox import DockerSandbox
from tests.support.boxes import config
from tests.support.helpers import make_repo
from tests.support.rootfs import FILL, PROBE, assert_nothing_writable, probe

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]


@pytest.fixture
def staged(tmp_path: Path) -> Iterator[StagedRepo]:
    from patcher.intake import stage_repo

    result = stage_repo(str(make_repo(tmp_path / "repo", {"README.md": "hello\n"})))
    yield result
    result.cleanup()


@pytest.mark.parametrize("python", [None, "3.9", "3.13"])
def test_the_root_is_writable_but_not_by_the_box_user(staged: StagedRepo, sandbox_image: str, python: str | None,
                                                       python_image: Callable[[str], str],
                                                       docker_client: docker.DockerClient) -> None:
    image = python_image(python) if python else sandbox_image
    with DockerSandbox(staged, config(image), client=docker_client) as box:
        facts = probe(box, PROBE)
        box.container.reload()
        assert box.container.attrs["HostConfig"]["ReadonlyRootfs"] is False
    assert_nothing_writable(facts)


def test_what_the_box_user_may_write_is_bounded_by_its_tmpfs(staged: StagedRepo, sandbox_image: str,
                                                            docker_client: docker.DockerClient) -> None:
    cfg = config(sandbox_image)  # tmp_mb 64, workspace_mb 128, memory_mb 512
    with DockerSandbox(staged, cfg, client=docker_client) as box:
        filled = probe(box, FILL)
    mib = 1 << 20
    for place, limit in (("/tmp", cfg.tmp_mb), ("/var/tmp", cfg.tmp_mb), (".", cfg.workspace_mb), ("/dev/shm", 64)):
        facts = filled[place]
        assert facts["same_device_as_root"] is False, place
        assert facts["size"] == limit * mib, (place, facts)
        assert facts["error"] == "ENOSPC" and facts["written"] <= limit * mib, (place, facts)
