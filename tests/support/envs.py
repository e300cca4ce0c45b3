"""The clock repository environment tests build images for (tests/data/envs/clock: it needs freezegun, uses a
src/ layout and has an off-by-one bug at noon), and the image repository those tests build into."""

from __future__ import annotations

from pathlib import Path

import docker

from patcher.env import EnvConfig, prune
from patcher.intake import StagedRepo, stage_repo
from tests.support.helpers import make_repo

FIXTURE = Path(__file__).parents[1] / "data" / "envs" / "clock"
BUG, FIXED = "hour <= 12", "hour < 12"
TEST_REPOSITORY = "patcher-env-test"


def clock_files() -> dict[str, str]:
    return {p.relative_to(FIXTURE).as_posix(): p.read_text() for p in FIXTURE.rglob("*") if p.is_file()}


def staged_repo(path: Path, files: dict[str, str]) -> StagedRepo:
    return stage_repo(str(make_repo(path, files)))


def remove_test_images(client: docker.DockerClient, config: EnvConfig) -> None:
    prune(client, config, remove_all=True)
