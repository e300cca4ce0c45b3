"""Crash intake, whatever protocol carried the crash: the project's key checked, its rate kept, the crash grouped
and a job opened for a new group (the crash counted on its group's job otherwise), never an event twice.

A protocol's routes (sentry.py) take the key from their request and hand `CrashIntake.receive` a reader that
turns the body into a neutral `Crash` (patcher/crash/) within the project's limits. Every answer but a taken
crash is an `IntakeRefused` with its HTTP status:

    400 malformed (nothing stored)          401 no key              403 a key this project does not have
    413 larger than the project takes       429 over the rate, or too many jobs open (retry_after)
    503 the crash's group changed under this request three times (retry_after)
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from patcher.crash import BadEvent, Crash, EventTooLarge, Scrubber, traceback_text
from patcher.errors import BadInput
from patcher.server.crashdb import CrashLog, Replayed, group_key
from patcher.server.errors import TooLarge, TooMany
from patcher.server.projects import ProjectConfig
from patcher.server.service import JobService
from patcher.trace import Redactor

Outcome = Literal["opened", "counted", "replayed", "ignored"]
Reader = Callable[[ProjectConfig, Scrubber], tuple[str | None, Crash | None]]
"""A request's body read into (its event id, its crash), within the project's limits and with its secrets
scrubbed; no crash for an event that holds none. Raises the crash package's BadEvent or EventTooLarge."""


class IntakeRefused(Exception):
    """An answer other than 200: the status, why, and for 429 and 503 when to come back."""

    def __init__(self, status: int, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.retry_after = status, detail, retry_after


@dataclass(frozen=True)
class Taken:
    event_id: str | None
    outcome: Outcome
    job_id: str | None = None


class CrashIntake:
    """Events of the configured projects into jobs: authenticated, bounded, grouped, never stored twice."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self.log: CrashLog = service.crashes

    def receive(self, project_id: str, key: str, read: Reader) -> Taken:
        """The crash `read` finds in a request to `project_id` carrying `key`, taken: its job opened or counted."""
        project = self._project(project_id, key)
        wait = self.log.retry_after(project.name, project.rate_limit, project.rate_window_s)
        if wait is not None:
            raise IntakeRefused(429, f"project {project.name} sent more than {project.rate_limit} events in "
                                     f"{project.rate_window_s:g} s", wait)
        try:
            event_id, crash = read(project, Scrubber(self._redactor()))
        except EventTooLarge as e:
            raise IntakeRefused(413, str(e)) from e
        except BadEvent as e:
            raise IntakeRefused(400, str(e)) from e
        if crash is None:
            return Taken(event_id, "ignored")
        return self._take(project, crash)

    def _project(self, project_id: str, key: str) -> ProjectConfig:
        project = self.service.settings.projects().by_id(project_id)
        known = project is not None and any(
            hmac.compare_digest(key.encode(), k.get_secret_value().encode()) for k in project.keys)
        if project is None or not known:
            raise IntakeRefused(403, "this DSN key may not send events to this project")
        return project

    def _redactor(self) -> Redactor:
        settings = self.service.settings
        return Redactor([*settings.projects().secrets(), *settings.git_access().secrets()])

    def _take(self, project: ProjectConfig, crash: Crash) -> Taken:
        if self.log.seen(project.name, crash.event_id):
            return Taken(crash.event_id, "replayed")
        try:
            ref = project.ref_for(crash.release)
        except BadInput as e:
            raise IntakeRefused(400, str(e)) from e
        key = group_key(project.name, crash)
        for _ in range(3):  # a group made by another request meanwhile is counted on the next turn
            try:
                job_id = self.log.count(key, project.name, crash.event_id)
                if job_id is not None:
                    return Taken(crash.event_id, "counted", job_id)
                return Taken(crash.event_id, "opened", self._open(project, crash, ref, key))
            except Replayed:
                return Taken(crash.event_id, "replayed")
            except _GroupTaken:
                continue
        raise IntakeRefused(503, "the crash's group is being changed by other requests; send it again", 1)

    def _open(self, project: ProjectConfig, crash: Crash, ref: str | None, key: str) -> str:
        from sqlalchemy.exc import IntegrityError

        request = project.request(traceback_text(crash), ref)
        try:
            job, _ = self.service.enqueue(request, project.submitter, project.max_active_jobs, within=lambda s, job_id:
                                          self.log.open(s, job_id, key, project.name, crash))
        except TooMany as e:
            raise IntakeRefused(429, f"project {project.name} has {project.max_active_jobs} jobs queued or running; "
                                     "a new crash waits for one to end", 60) from e
        except TooLarge as e:
            raise IntakeRefused(413, str(e)) from e
        except BadInput as e:
            raise IntakeRefused(400, f"project {project.name}: {e}") from e
        except IntegrityError as e:
            raise _GroupTaken from e
        return job.id


class _GroupTaken(Exception):
    """Another request opened the crash's group (or took the event) first."""
