"""Durable jobs and reviews: SQLAlchemy 2.x, a SQLite file by default; any SQLAlchemy URL works the same.

    queued ──claim──▶ running ──finish──▶ done | failed | cancelled
      │                 │ worker lost (lease lapsed): re-queued, or failed once attempts reach the limit
      └──cancel──▶ cancelled          cancel on a running job sets a flag its worker polls

Claiming is a compare-and-set (`UPDATE … WHERE state = 'queued'`) in a transaction that on SQLite
begins IMMEDIATE (one writer at a time, others wait out the busy timeout) and elsewhere selects
`FOR UPDATE SKIP LOCKED`, so no two workers ever run one job. Each claim carries a fresh token: heartbeat
and finish match it, so a worker whose job was recovered after its lease lapsed cannot overwrite the
next attempt. Job events are rows of eventlog.py, beside these tables.

Listeners (`Store.listeners`) are told of each change (`submitted`, `finished`, `approved`, `rejected`) inside
the transaction that makes it, so what they write (the outbox of webhooks and deliveries) commits with it or
not at all.

    BadInput
    ├── UnknownJob             no job with that id
    └── IdempotencyConflict    the idempotency key was used for a different spec
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict
from sqlalchemy import (
    create_engine,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from patcher.errors import BadInput
from patcher.server.db import Base, JobRow, ReviewRow, create_schema, default_url, sqlite_engine
from patcher.server.snapshots import Review, StoredJob, job_of, review_of

log = logging.getLogger(__name__)
JobState = Literal["queued", "running", "done", "failed", "cancelled"]
STATES: tuple[JobState, ...] = get_args(JobState)
DECISIONS = ("approve", "reject")
JobChange = Literal["submitted", "finished", "approved", "rejected"]
Listener = Callable[[Session, str, JobChange], None]
"""Told (session, job id, change) inside the transaction of the change."""


class UnknownJob(BadInput):
    pass


class IdempotencyConflict(BadInput):
    pass


class StoreConfig(BaseModel):
    """Where jobs are kept."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    url: str | None = None
    """SQLAlchemy URL (e.g. postgresql+psycopg://…); None means the SQLite file PATCHER_HOME/patcher.db."""
    busy_timeout_s: float = 30.0
    """SQLite: how long a writer waits for another to finish before giving up."""


def _now() -> datetime:
    return datetime.now(UTC)


class Store:
    """Jobs and reviews in one database. Thread-safe; several processes may share one SQLite file."""

    def __init__(self, config: StoreConfig | str | None = None) -> None:
        cfg = StoreConfig(url=config) if isinstance(config, str) or config is None else config
        url = cfg.url or default_url()
        self.url = url
        self.engine = sqlite_engine(url, cfg.busy_timeout_s) if url.startswith("sqlite") else \
            create_engine(url, pool_pre_ping=True)
        create_schema(self.engine, Base.metadata)
        self.listeners: list[Listener] = []

    def _tell(self, s: Session, job_id: str, change: JobChange) -> None:
        for listener in self.listeners:
            try:
                with s.begin_nested():  # a savepoint: a listener that fails leaves nothing half-written
                    listener(s, job_id, change)
            except Exception:  # the job's change stands without what the listener would have added
                log.exception("recording what follows from %s of job %s failed", change, job_id)

    def close(self) -> None:
        self.engine.dispose()

    def _tx(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def submit(self, spec: dict[str, Any], idempotency_key: str | None = None,
               submitter: str | None = None, within: Callable[[Session, str], None] | None = None
               ) -> tuple[StoredJob, bool]:
        """Queue a job; (job, True) when new, (the earlier job, False) when the key was seen with this spec.
        `within(session, job id)` runs in the transaction that makes a new job (what it adds commits with it)."""
        spec = json.loads(json.dumps(spec))
        try:
            with self._tx() as s, s.begin():
                if idempotency_key is not None:
                    earlier = s.scalar(select(JobRow).where(JobRow.idempotency_key == idempotency_key))
                    if earlier is not None:
                        return self._same_spec(earlier, spec), False
                now = _now()
                row = JobRow(id=time.strftime("%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(4),
                             created_at=now, updated_at=now, state="queued", spec=spec, result=None,
                             idempotency_key=idempotency_key, error=None, attempts=0, cancel_requested=False,
                             submitter=submitter)
                s.add(row)
                s.flush()
                if within is not None:
                    within(s, row.id)
                self._tell(s, row.id, "submitted")
                return job_of(row), True
        except IntegrityError:  # a concurrent submit with the same key won (databases without IMMEDIATE)
            if idempotency_key is None:
                raise  # a constraint of what `within` added
            with self._tx() as s:
                earlier = s.scalar(select(JobRow).where(JobRow.idempotency_key == idempotency_key))
                if earlier is None:
                    raise
                return self._same_spec(earlier, spec), False

    @staticmethod
    def _same_spec(earlier: JobRow, spec: dict[str, Any]) -> StoredJob:
        if earlier.spec != spec:
            raise IdempotencyConflict(f"idempotency key {earlier.idempotency_key!r} was already used for "
                                      f"job {earlier.id} with a different request")
        return job_of(earlier)

    def get(self, job_id: str) -> StoredJob | None:
        with self._tx() as s:
            row = s.get(JobRow, job_id)
            return job_of(row) if row else None

    def list_jobs(self, state: str | None = None, limit: int = 100, offset: int = 0) -> list[StoredJob]:
        """Newest first."""
        query = select(JobRow).order_by(JobRow.created_at.desc(), JobRow.id.desc()).limit(limit).offset(offset)
        if state is not None:
            query = query.where(JobRow.state == state)
        with self._tx() as s:
            return [job_of(row) for row in s.scalars(query)]

    def active(self, submitter: str) -> int:
        """How many of this submitter's jobs are queued or running."""
        query = select(func.count()).select_from(JobRow).where(
            JobRow.submitter == submitter, JobRow.state.in_(("queued", "running")))
        with self._tx() as s:
            return int(s.scalar(query) or 0)

    def claim(self) -> StoredJob | None:
        """Take the oldest queued job (now running, attempts + 1, a fresh token), or None when none waits."""
        for _ in range(16):  # the compare-and-set loses only to a concurrent claimer
            with self._tx() as s, s.begin():
                job_id = s.scalar(select(JobRow.id).where(JobRow.state == "queued")
                                  .order_by(JobRow.created_at, JobRow.id).limit(1).with_for_update(skip_locked=True))
                if job_id is None:
                    return None
                now = _now()
                won = s.execute(update(JobRow).where(JobRow.id == job_id, JobRow.state == "queued").values(
                    state="running", attempts=JobRow.attempts + 1, claim_token=secrets.token_hex(16),
                    heartbeat_at=now, updated_at=now).execution_options(synchronize_session=False))
                if won.rowcount == 1:  # type: ignore[attr-defined]
                    return job_of(s.get_one(JobRow, job_id))
        return None

    def heartbeat(self, tokens: Collection[str]) -> set[str]:
        """Extend the leases of these claims; return the tokens whose work should stop (cancelled or lost)."""
        if not tokens:
            return set()
        with self._tx() as s, s.begin():
            s.execute(update(JobRow).where(JobRow.claim_token.in_(tokens), JobRow.state == "running")
                      .values(heartbeat_at=_now()).execution_options(synchronize_session=False))
            held = {t: c for t, c in s.execute(select(JobRow.claim_token, JobRow.cancel_requested)
                                               .where(JobRow.claim_token.in_(tokens), JobRow.state == "running"))}
        return {t for t in tokens if t not in held or held[t]}

    def stopping(self, tokens: Collection[str]) -> set[str]:
        """The tokens whose work should stop (cancelled or lost), read only: the cheap check between heartbeats."""
        if not tokens:
            return set()
        with self._tx() as s:
            held = {t: c for t, c in s.execute(select(JobRow.claim_token, JobRow.cancel_requested)
                                               .where(JobRow.claim_token.in_(tokens), JobRow.state == "running"))}
        return {t for t in tokens if t not in held or held[t]}

    def finish(self, job_id: str, token: str, result: dict[str, Any] | None = None,
               error: str | None = None) -> str | None:
        """Record the end of a claimed run: failed with an error, cancelled if asked, else done.

        Returns the new state, or None when the claim no longer holds (the job was recovered meanwhile).
        """
        with self._tx() as s, s.begin():
            row = s.get(JobRow, job_id, with_for_update=True)
            if row is None or row.state != "running" or row.claim_token != token:
                return None
            row.state = "failed" if error is not None else "cancelled" if row.cancel_requested else "done"
            row.result, row.error, row.claim_token, row.updated_at = result, error, None, _now()
            self._tell(s, job_id, "finished")
            return row.state

    def cancel(self, job_id: str) -> str:
        """Cancel a queued job now, or flag a running one for its worker; return the job's state after."""
        with self._tx() as s, s.begin():
            row = s.get(JobRow, job_id, with_for_update=True)
            if row is None:
                raise UnknownJob(f"no job {job_id}")
            if row.state == "queued":
                row.state, row.error = "cancelled", "cancelled before it started"
                self._tell(s, job_id, "finished")
            elif row.state == "running":
                row.cancel_requested = True
            row.updated_at = _now()
            return row.state

    def recover(self, stale_after_s: float, max_attempts: int = 2) -> list[tuple[str, str]]:
        """Re-queue running jobs whose lease lapsed, or fail them once `max_attempts` runs were interrupted.

        Returns (job id, new state) for each job touched.
        """
        cutoff = _now() - timedelta(seconds=stale_after_s)
        touched = []
        with self._tx() as s, s.begin():
            lapsed = or_(JobRow.heartbeat_at.is_(None), JobRow.heartbeat_at < cutoff)
            rows = list(s.scalars(select(JobRow).where(JobRow.state == "running", lapsed)
                             .order_by(JobRow.created_at, JobRow.id).with_for_update(skip_locked=True)))
            for row in rows:
                lost = f"attempt {row.attempts} was interrupted (its worker crashed or stopped)"
                if row.cancel_requested:
                    row.state, row.error = "cancelled", f"{lost}; it had been cancelled"
                elif row.attempts >= max_attempts:
                    row.state, row.error = "failed", f"{lost}; {row.attempts} attempts interrupted, not retried"
                else:
                    row.state, row.error = "queued", f"{lost}; re-queued"
                row.claim_token, row.updated_at = None, _now()
                touched.append((row.id, row.state))
                if row.state != "queued":
                    self._tell(s, row.id, "finished")
        return touched

    def add_review(self, job_id: str, decision: str, who: str, comment: str = "") -> Review:
        if decision not in DECISIONS:
            raise BadInput(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
        with self._tx() as s, s.begin():
            if s.get(JobRow, job_id) is None:
                raise UnknownJob(f"no job {job_id}")
            row = ReviewRow(job_id=job_id, decision=decision, who=who, comment=comment, created_at=_now())
            s.add(row)
            s.flush()
            self._tell(s, job_id, "approved" if decision == "approve" else "rejected")
            return review_of(row)

    def reviews(self, job_id: str) -> list[Review]:
        """Oldest first; the last one is the current decision."""
        with self._tx() as s:
            rows = s.scalars(select(ReviewRow).where(ReviewRow.job_id == job_id).order_by(ReviewRow.id))
            return [review_of(r) for r in rows]
