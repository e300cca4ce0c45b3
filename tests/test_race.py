"""Auto mode's sides (patcher/race.py): each engine in its own thread with its own boxes and Stopper. Stopping
one side kills its boxes at once, so a call blocked on them ends; cancelling the job stops every side.
Real tool servers (LocalSandbox), real threads."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import docker
import pytest

from patcher.errors import Cancelled, SandboxError
from patcher.intake import stage_repo
from patcher.race import LOW_SHARES, Side
from patcher.sandbox import BoxPool, DockerBoxes, DockerSandbox, LocalSandbox
from patcher.stopper import Stopper
from patcher.verify import Job
from sandbox.protocol import RunTestRequest
from tests.support.boxes import config
from tests.support.helpers import make_repo

SLEEP = "python -c 'import time; time.sleep(20)'"


def _job(tmp_path: Path) -> Job:
    return Job(stage_repo(str(make_repo(tmp_path / "r", {"a.py": "x = 1\n"}))), LocalSandbox, "python -m pytest -q")


def _blocked(started: threading.Event):  # type: ignore[no-untyped-def]
    def body(job: Job, stopper: Stopper) -> str:
        with job.open_box(job.staged) as box:
            started.set()
            box.call(RunTestRequest(command=SLEEP), 60)
        stopper.check()
        return "ran to its end"
    return body


@pytest.mark.parametrize("who", ["side", "job"])
def test_a_stopped_side_ends_at_once_with_no_result(tmp_path: Path, who: str) -> None:
    job, parent, started = _job(tmp_path), Stopper(), threading.Event()
    ended: list[Side[str]] = []
    side: Side[str] = Side(job, parent).start(_blocked(started), ended.append)
    assert started.wait(30)
    at = time.monotonic()
    if who == "side":
        side.stop("agent_verified")
    else:
        parent.flag.set()
    side.wait()
    parent.close()
    job.staged.cleanup()
    assert time.monotonic() - at < 10 and ended == [side]
    assert side.result is None and isinstance(side.error, (SandboxError, Cancelled))
    assert side.stopped_by == ("agent_verified" if who == "side" else "")


def test_stopping_one_side_leaves_the_other_and_the_job_running(tmp_path: Path) -> None:
    job, parent = _job(tmp_path), Stopper()
    first: Side[str] = Side(job, parent)
    second: Side[str] = Side(job, parent)
    first.stop("offline_verified")
    with pytest.raises(Cancelled):
        first.stopper.check()
    second.stopper.check()
    parent.check()
    assert second.run(lambda j, s: "done").result == "done" and second.stopped_by == ""
    job.staged.cleanup()


def test_a_side_stops_with_its_job() -> None:
    parent = Stopper()
    child = Stopper(parent=parent)
    child.check()
    parent.flag.set()
    assert child.cancelled
    with pytest.raises(Cancelled):
        child.check()


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_a_bounded_sides_boxes_yield_the_cpu_to_the_jobs_own(tmp_path: Path, sandbox_image: str,
                                                            docker_client: docker.DockerClient) -> None:
    """Beside the agent, the template search's boxes are capped (nano_cpus) and weighted low (cpu_shares),
    so under contention the agent's verification runs get the CPU; the job's own boxes keep the defaults."""
    staged = stage_repo(str(make_repo(tmp_path / "r", {"a.py": "x = 1\n"})))
    job = Job(staged, LocalSandbox, "python -m pytest -q")
    try:
        with BoxPool(docker_client) as pool:
            boxes = DockerBoxes(config(sandbox_image), docker_client, pool, Stopper())
            side: Side[None] = Side(replace(job, open_box=boxes), Stopper(), cpus=0.5)
            got = {}
            for name, opener in (("side", side.job.open_box), ("job", boxes)):
                with opener(staged) as box:
                    assert isinstance(box, DockerSandbox)
                    host = docker_client.api.inspect_container(box.container.id)["HostConfig"]
                    got[name] = (host["NanoCpus"], host["CpuShares"])
    finally:
        staged.cleanup()
    assert got == {"side": (500_000_000, LOW_SHARES), "job": (1_000_000_000, 0)}
