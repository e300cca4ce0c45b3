"""Crash intake in the Sentry protocol: any application using a Sentry SDK points its DSN at this server.

    POST /api/{project}/envelope/     an envelope (the SDKs' default), plain or gzip/deflate
    POST /api/{project}/store/        one event as JSON (the older endpoint)

The DSN's public key is the credential (`X-Sentry-Auth: Sentry sentry_key=…` or `?sentry_key=…`); the
project and what its crashes become are the operator's (projects.py). This module holds the routes, the key
header and the body's decoding; crashes.py takes the crash (key check, rate, grouping, the job). Answers as
Sentry gives them:

    200 {"id": event_id}    taken: a new job, or counted on the job of the same crash; also an event with no
                            exception, or one taken before (replayed), both storing nothing
    400 {"detail": why}     malformed (nothing stored)              413  larger than the project takes
    401 no key              403 a key this project does not have    429  over the rate (Retry-After)
"""

from __future__ import annotations

import math
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from patcher.crash import (
    Crash,
    Scrubber,
    decoded,
    event_id_of,
    event_of_envelope,
    event_of_store,
    read_crash,
    sentry_key,
)
from patcher.server.crashes import CrashIntake, IntakeRefused, Reader
from patcher.server.projects import ProjectConfig

router = APIRouter(tags=["crash intake"])
Kind = Literal["envelope", "store"]
MISSING_KEY = "missing authorization: send X-Sentry-Auth with sentry_key (the DSN's public key)"


def reader(body: bytes, encoding: str | None, kind: Kind) -> Reader:
    """The crash in a Sentry request's body: an envelope's event or a stored event, decompressed and read within
    the project's limits."""

    def read(project: ProjectConfig, scrubber: Scrubber) -> tuple[str | None, Crash | None]:
        data = decoded(body, encoding, project.limits.max_event_bytes)
        if kind == "envelope":
            event_id, event = event_of_envelope(data)
        else:
            event_id, event = None, event_of_store(data)
        if event is None:
            return event_id, None
        event_id = event_id_of(event.get("event_id", event_id))
        return event_id, read_crash(event, event_id, project.limits, scrubber)

    return read


def intake_of(request: Request) -> CrashIntake:
    return request.app.state.crash_intake  # type: ignore[no-any-return]


async def _receive(request: Request, project_id: str, kind: Kind) -> JSONResponse:
    key = sentry_key(request.headers.get("x-sentry-auth"), request.query_params.get("sentry_key"))
    body = await request.body()
    if not key:
        return _refused(IntakeRefused(401, MISSING_KEY))
    read = reader(body, request.headers.get("content-encoding"), kind)
    try:
        taken = await run_in_threadpool(intake_of(request).receive, project_id, key, read)
    except IntakeRefused as e:
        return _refused(e)
    return JSONResponse({"id": taken.event_id}, 200, headers={"X-Patcher-Outcome": taken.outcome})


def _refused(e: IntakeRefused) -> JSONResponse:
    """A refusal as the Sentry SDKs read it: the status, why, and when to send again."""
    headers = {}
    if e.retry_after is not None:
        seconds = str(math.ceil(e.retry_after))
        headers = {"Retry-After": seconds, "X-Sentry-Rate-Limits": f"{seconds}::organization"}
    return JSONResponse({"detail": e.detail}, e.status, headers=headers)


@router.post("/api/{project_id}/envelope/")
async def envelope(project_id: str, request: Request) -> JSONResponse:
    """A Sentry envelope: its event becomes a job, or is counted on the job of the same crash."""
    return await _receive(request, project_id, "envelope")


@router.post("/api/{project_id}/store/")
async def store(project_id: str, request: Request) -> JSONResponse:
    """One Sentry event as JSON (the older endpoint)."""
    return await _receive(request, project_id, "store")

