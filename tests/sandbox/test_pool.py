"""Spare boxes started ahead of need: each is fresh, taken once, and nothing is left when the pool closes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import OWNER, BoxPool, DockerSandbox, owner_labels
from sandbox.protocol import GitDiffRequest, PingRequest, ReadFileRequest, WriteFileRequest
from tests.support.boxes import _owned, config
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def staged(tmp_path: Path) -> Iterator[StagedRepo]:
    result = stage_repo(str(make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})))
    yield result
    result.cleanup()


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_pooled_boxes_are_fresh_taken_once_and_all_removed(staged: StagedRepo, sandbox_image: str,
                                                           docker_client: docker.DockerClient) -> None:
    cfg = config(sandbox_image)
    owner = owner_labels()[OWNER]
    pool = BoxPool(docker_client)
    try:
        pool.warm(cfg)
        with DockerSandbox(staged, cfg, docker_client, pool) as first:
            assert first.call(WriteFileRequest("b.py", "y = 2\n")).output == "wrote 6 bytes to b.py"
            assert "+y = 2" in first.call(GitDiffRequest()).data["diff"]  # base commit came in the hello
            first_name = first.container.name
        with DockerSandbox(staged, cfg, docker_client, pool) as second:
            assert second.container.name != first_name
            assert second.call(GitDiffRequest()).output == "no changes"  # nothing of the first box
            assert second.call(ReadFileRequest("a.py")).output == "     1\tx = 1\n"
            containers, _ = _owned(docker_client, owner)
            others = set(containers) - {first_name}  # the first box's removal may still be under way
            assert second.container.name in others and len(others) == 2, containers  # it + one spare
    finally:
        pool.close()
    assert _owned(docker_client, owner) == ([], [])


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_a_spare_that_died_is_never_handed_out(staged: StagedRepo, sandbox_image: str,
                                               docker_client: docker.DockerClient) -> None:
    cfg = config(sandbox_image)
    owner = owner_labels()[OWNER]
    with BoxPool(docker_client) as pool:
        pool.warm(cfg)
        for _ in range(100):
            containers, _ = _owned(docker_client, owner)
            if containers and docker_client.containers.get(containers[0]).status == "running":
                break
            time.sleep(0.1)
        docker_client.containers.get(containers[0]).kill()
        with DockerSandbox(staged, cfg, docker_client, pool) as box:
            assert box.container.name != containers[0]
            assert box.call(PingRequest()).output == "pong"
    assert _owned(docker_client, owner) == ([], [])


def test_the_server_takes_its_base_from_the_hello_or_refuses_to_start(staged: StagedRepo) -> None:
    argv = [sys.executable, "-m", "sandbox.server", "--repo", str(staged.path)]
    hello = b'{"hello": {"key": "' + b"ab" * 32 + b'", "allow": []}}\n'
    out = subprocess.run(argv, input=hello, capture_output=True, cwd=ROOT, timeout=30)
    assert out.returncode == 2 and b"no base commit" in out.stderr
    bad = b'{"hello": {"key": "' + b"ab" * 32 + b'", "allow": [], "base": 7}}\n'
    out = subprocess.run(argv, input=bad, capture_output=True, cwd=ROOT, timeout=30)
    assert out.returncode == 2 and b"base must be a commit id" in out.stderr
