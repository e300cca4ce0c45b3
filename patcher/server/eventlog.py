"""Job events in the shared database, so any API node streams any job's trace while it grows.

Each trace event of a server job is also a row here, numbered 1, 2, 3… per job across its attempts: that
number is the event id of the server-sent stream. So a re-queued attempt continues the ids of the one a
crashed worker left (no id repeats, none is skipped by `Last-Event-ID`), and nodes share nothing but the
database. A row is written only while the writer's claim on the job holds: a worker whose lease lapsed
(and whose job runs again elsewhere) cannot interleave its events with the next attempt's: the insert
locks the job's row (which also makes `max(n) + 1` safe), so a new claim waits for it and every id of the
next attempt is higher.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String, UniqueConstraint, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from patcher.server.db import JobRow, create_schema


class _Base(DeclarativeBase):
    pass


class EventRow(_Base):
    __tablename__ = "job_events"
    __table_args__ = (UniqueConstraint("job_id", "n"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(40), ForeignKey(JobRow.id), index=True)
    n: Mapped[int] = mapped_column()
    """1, 2, 3… within the job, across attempts: the stream's event id."""
    attempt: Mapped[int] = mapped_column(default=1)
    event: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column()


class EventLog:
    """Append and read job events; thread-safe, any number of processes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_schema(engine, _Base.metadata)

    def append(self, job_id: str, token: str, attempt: int, event: dict[str, Any]) -> bool:
        """Store one event of the attempt holding claim `token`; False (nothing stored) once the claim is gone."""
        with Session(self.engine) as s, s.begin():
            held = s.scalar(select(JobRow.id).where(JobRow.id == job_id, JobRow.claim_token == token,
                                                    JobRow.state == "running").with_for_update())
            if held is None:
                return False
            last = s.scalar(select(func.max(EventRow.n)).where(EventRow.job_id == job_id)) or 0
            s.add(EventRow(job_id=job_id, n=last + 1, attempt=attempt, event=event,
                           created_at=datetime.now(UTC).replace(tzinfo=None)))
        return True

    def after(self, job_id: str, last_id: int = 0, limit: int = 500) -> list[tuple[int, dict[str, Any]]]:
        """(id, event) of the job's events with ids above `last_id`, oldest first; each event names the worker's
        attempt at the job in `job_attempt` (the event's own fields, such as an `attempt` event's number, stay)."""
        with Session(self.engine) as s:
            rows = s.execute(select(EventRow.n, EventRow.attempt, EventRow.event)
                             .where(EventRow.job_id == job_id, EventRow.n > last_id)
                             .order_by(EventRow.n).limit(limit))
            return [(row_id, {**event, "job_attempt": attempt}) for row_id, attempt, event in rows]
