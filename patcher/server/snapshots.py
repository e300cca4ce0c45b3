"""What the store hands out: frozen snapshots of a job row and a review row, never the rows themselves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from patcher.server.db import JobRow, ReviewRow


@dataclass(frozen=True)
class StoredJob:
    """A snapshot of one job row."""

    id: str
    state: str
    spec: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    idempotency_key: str | None
    attempts: int
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    token: str | None
    """The claim token while running (hand it back to heartbeat and finish)."""
    submitter: str | None = None
    """The name of the token that submitted the job (None for jobs from before it was recorded)."""


@dataclass(frozen=True)
class Review:
    job_id: str
    decision: str
    comment: str
    who: str
    when: datetime


def job_of(row: JobRow) -> StoredJob:
    return StoredJob(id=row.id, state=row.state, spec=row.spec, result=row.result, error=row.error,
               idempotency_key=row.idempotency_key, attempts=row.attempts, cancel_requested=row.cancel_requested,
               created_at=row.created_at, updated_at=row.updated_at, token=row.claim_token,
               submitter=row.submitter)


def review_of(row: ReviewRow) -> Review:
    return Review(job_id=row.job_id, decision=row.decision, comment=row.comment, who=row.who, when=row.created_at)
