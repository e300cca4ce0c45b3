"""Crash intake's core knows no protocol (server/crashes.py): a tracker other than Sentry hands it a reader of its
own body, and its crash opens a job, the same crash is counted on it, and a wrong key, a malformed body or an
event taken before are answered as the Sentry routes answer them (test_sentry.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.crash import BadEvent, Crash, CrashException, CrashFrame, Scrubber
from patcher.server.crashes import CrashIntake, IntakeRefused, Reader
from patcher.server.projects import ProjectConfig
from patcher.server.service import JobService
from patcher.server.settings import load_settings
from tests.support.crashes import KEY, project, projects_file, shop_repo


def other_tracker(event_id: str, body: dict[str, str]) -> Reader:
    """Another tracker's body, read into the neutral crash: {"type", "message", "file", "function", "line",
    "release"}."""

    def read(project: ProjectConfig, scrub: Scrubber) -> tuple[str | None, Crash | None]:
        if "type" not in body:
            raise BadEvent("no exception type")
        frame = CrashFrame(path=f"/srv/shop/{body['file']}", filename=body["file"], function=body["function"],
                           lineno=int(body["line"]), source=None, in_app=True)
        exception = CrashException(type=body["type"], message=scrub.text(body["message"], 200), frames=(frame,))
        return event_id, Crash(event_id=event_id, release=body.get("release"), environment=None,
                               chain=(exception,))

    return read


@pytest.fixture
def shop(tmp_path: Path) -> tuple[CrashIntake, dict[str, str]]:
    """The intake of a server taking the shop's crashes, and a crash of the shop's deployed commit."""
    repo, commit = shop_repo(tmp_path / "repos" / "shop")
    settings = load_settings(home=tmp_path / "home", database_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0,
                             repo_roots=[tmp_path / "repos"], dev=True,
                             projects_file=projects_file(tmp_path / "projects.json", [project(str(repo))]))
    crash = {"type": "IndexError", "message": "list index out of range", "file": "shop/pagination.py",
             "function": "page", "line": "12", "release": commit}
    return CrashIntake(JobService(settings)), crash


def test_another_trackers_crash_opens_a_job_and_the_same_crash_is_counted_on_it(
        shop: tuple[CrashIntake, dict[str, str]]) -> None:
    intake, crash = shop
    opened = intake.receive("1", KEY, other_tracker("a" * 32, crash))
    assert opened.outcome == "opened" and opened.job_id is not None
    job = intake.service.store.get(opened.job_id)
    assert job is not None and "IndexError: list index out of range" in job.spec["traceback"]
    counted = intake.receive("1", KEY, other_tracker("b" * 32, crash))
    assert (counted.outcome, counted.job_id) == ("counted", opened.job_id)
    assert intake.receive("1", KEY, other_tracker("b" * 32, crash)).outcome == "replayed"


@pytest.mark.parametrize(("project_id", "key", "drop", "status"), [
    ("1", "f" * 32, None, 403),
    ("9", KEY, None, 403),
    ("1", KEY, "type", 400),
    ("1", KEY, "release", 400),
])
def test_what_the_core_refuses_it_refuses_for_every_protocol(
        shop: tuple[CrashIntake, dict[str, str]], project_id: str, key: str, drop: str | None, status: int) -> None:
    intake, crash = shop
    body = {k: v for k, v in crash.items() if k != drop}
    with pytest.raises(IntakeRefused) as refused:
        intake.receive(project_id, key, other_tracker("c" * 32, body))
    assert refused.value.status == status
