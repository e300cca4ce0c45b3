"""Crash intake in the Sentry protocol: any application using a Sentry SDK points its DSN at this server.

    POST /api/{project}/envelope/     an envelope (the SDKs' default), plain or gzip/deflate
    POST /api/{project}/store/        one event as JSON (the older endpoint)

The DSN's public key is the credential (`X-Sentry-Auth: Sentry sentry_key=…` or `?sentry_key=…`); the
project and what its crashes become are the operator's (projects.py). Answers as Sentry gives them:

    200 {"id": event_id}    taken: a new job, or counted on the job of the same crash; also an event with no
                            exception, or one taken before (replayed), both storing nothing
    400 {"detail": why}     malformed (nothing stored)              413  larger than the project takes
    401 no key              403 a key this project does not have    429  over the rate (Retry-After)
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from patcher.crash import (
    BadEvent,
    Crash,
    EventTooLarge,
    Scrubber,
    decoded,
    event_id_of,
    event_of_envelope,
    event_of_store,
    read_crash,
    sentry_key,
    traceback_text,
)
from patcher.errors import BadInput
from patcher.server.crashdb import CrashLog, Replayed, group_key
from patcher.server.errors import TooLarge, TooMany
from patcher.server.projects import ProjectConfig
from patcher.server.service import JobService
from patcher.trace import Redactor

router = APIRouter(tags=["crash intake"])
Outcome = Literal["opened", "counted", "replayed", "ignored"]


class Refused(Exception):
    """An answer other than 200: the status, why, and for 429 when to come back."""

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

    def receive(self, project_id: str, key: str | None, body: bytes, encoding: str | None,
                kind: Literal["envelope", "store"]) -> Taken:
        project = self._project(project_id, key)
        wait = self.log.retry_after(project.name, project.rate_limit, project.rate_window_s)
        if wait is not None:
            raise Refused(429, f"project {project.name} sent more than {project.rate_limit} events in "
                               f"{project.rate_window_s:g} s", wait)
        try:
            data = decoded(body, encoding, project.limits.max_event_bytes)
            if kind == "envelope":
                event_id, event = event_of_envelope(data)
            else:
                event = event_of_store(data)
                event_id = None
            if event is None:
                return Taken(event_id, "ignored")
            event_id = event_id_of(event.get("event_id", event_id))
            crash = read_crash(event, event_id, project.limits, Scrubber(self._redactor()))
        except EventTooLarge as e:
            raise Refused(413, str(e)) from e
        except BadEvent as e:
            raise Refused(400, str(e)) from e
        if crash is None:
            return Taken(event_id, "ignored")
        return self._take(project, crash)

    def _project(self, project_id: str, key: str | None) -> ProjectConfig:
        if not key:
            raise Refused(401, "missing authorization: send X-Sentry-Auth with sentry_key (the DSN's public key)")
        project = self.service.settings.projects().by_id(project_id)
        known = project is not None and any(
            hmac.compare_digest(key.encode(), k.get_secret_value().encode()) for k in project.keys)
        if project is None or not known:
            raise Refused(403, "this DSN key may not send events to this project")
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
            raise Refused(400, str(e)) from e
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
        raise Refused(503, "the crash's group is being changed by other requests; send it again", 1)

    def _open(self, project: ProjectConfig, crash: Crash, ref: str | None, key: str) -> str:
        from sqlalchemy.exc import IntegrityError

        request = project.request(traceback_text(crash), ref)
        try:
            job, _ = self.service.enqueue(request, project.submitter, project.max_active_jobs, within=lambda s, job_id:
                                          self.log.open(s, job_id, key, project.name, crash))
        except TooMany as e:
            raise Refused(429, f"project {project.name} has {project.max_active_jobs} jobs queued or running; "
                               "a new crash waits for one to end", 60) from e
        except TooLarge as e:
            raise Refused(413, str(e)) from e
        except BadInput as e:
            raise Refused(400, f"project {project.name}: {e}") from e
        except IntegrityError as e:
            raise _GroupTaken from e
        return job.id


class _GroupTaken(Exception):
    """Another request opened the crash's group (or took the event) first."""


def intake_of(request: Request) -> CrashIntake:
    return request.app.state.crash_intake  # type: ignore[no-any-return]


async def _receive(request: Request, project_id: str, kind: Literal["envelope", "store"]) -> JSONResponse:
    key = sentry_key(request.headers.get("x-sentry-auth"), request.query_params.get("sentry_key"))
    body = await request.body()
    try:
        taken = await run_in_threadpool(intake_of(request).receive, project_id, key, body,
                                        request.headers.get("content-encoding"), kind)
    except Refused as e:
        headers = {}
        if e.retry_after is not None:
            seconds = str(math.ceil(e.retry_after))
            headers = {"Retry-After": seconds, "X-Sentry-Rate-Limits": f"{seconds}::organization"}
        return JSONResponse({"detail": e.detail}, e.status, headers=headers)
    return JSONResponse({"id": taken.event_id}, 200, headers={"X-Patcher-Outcome": taken.outcome})


@router.post("/api/{project_id}/envelope/")
async def envelope(project_id: str, request: Request) -> JSONResponse:
    """A Sentry envelope: its event becomes a job, or is counted on the job of the same crash."""
    return await _receive(request, project_id, "envelope")


@router.post("/api/{project_id}/store/")
async def store(project_id: str, request: Request) -> JSONResponse:
    """One Sentry event as JSON (the older endpoint)."""
    return await _receive(request, project_id, "store")

