"""Auto mode's sides (patcher/race.py): each engine in its own thread with its own boxes and Stopper. Stopping
one side kills its boxes at once, so a call blocked on them ends; cancelling the job stops every side.
Real tool servers (LocalSandbox), real threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from patcher.errors import Cancelled, SandboxError
from patcher.intake import stage_repo
from patcher.race import Side
from patcher.sandbox import LocalSandbox
from patcher.stopper import Stopper
from patcher.verify import Job
from sandbox.protocol import RunTestRequest
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
