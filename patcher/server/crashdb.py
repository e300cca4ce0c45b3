"""Crash groups and the events counted on them, beside the jobs they opened.

A group is one crash of one project in one release (crash intake's fingerprint: exception types and
repository frames); its first event opens a job (in the same transaction as the group, so two nodes taking
the same new crash at once open one job: the loser's insert of the group fails and it counts instead).
Each event taken is a row keyed by (project, event_id), kept for RETAIN_S: a replayed event is known and
stores nothing, and the rows of the last window are the project's rate.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint, delete, func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from patcher.crash import Crash
from patcher.server.db import JobRow, UtcDateTime, create_schema

RETAIN_S = 30 * 86400.0
"""How long a taken event is remembered: a replay older than that counts again."""


class _Base(DeclarativeBase):
    pass


class CrashGroupRow(_Base):
    __tablename__ = "crash_groups"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    release: Mapped[str | None] = mapped_column(String(200), nullable=True)
    job_id: Mapped[str] = mapped_column(String(40), ForeignKey(JobRow.id), index=True)
    title: Mapped[str] = mapped_column(String(300))
    culprit: Mapped[str] = mapped_column(String(400))
    count: Mapped[int] = mapped_column(default=1)
    first_seen: Mapped[datetime] = mapped_column(UtcDateTime)
    last_seen: Mapped[datetime] = mapped_column(UtcDateTime)


class CrashEventRow(_Base):
    __tablename__ = "crash_events"
    __table_args__ = (UniqueConstraint("project", "event_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(String(64))
    event_id: Mapped[str] = mapped_column(String(32))
    group_key: Mapped[str] = mapped_column(String(64), ForeignKey(CrashGroupRow.key), index=True)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class Replayed(Exception):
    """The event was taken before (same project and event id)."""


@dataclass(frozen=True)
class Group:
    """What a job page and the job list show of the crash behind a job."""

    project: str
    release: str | None
    title: str
    culprit: str
    count: int
    first_seen: datetime
    last_seen: datetime

    def as_json(self) -> dict[str, Any]:
        return {"project": self.project, "release": self.release, "title": self.title, "culprit": self.culprit,
                "count": self.count, "first_seen": self.first_seen.isoformat(),
                "last_seen": self.last_seen.isoformat()}


def group_key(project: str, crash: Crash) -> str:
    return hashlib.sha256(f"{project}\0{crash.release or ''}\0{crash.fingerprint}".encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


class CrashLog:
    """The groups and events; thread-safe, any number of processes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_schema(engine, _Base.metadata)

    def seen(self, project: str, event_id: str) -> bool:
        with Session(self.engine) as s:
            return s.scalar(select(CrashEventRow.id).where(CrashEventRow.project == project,
                                                           CrashEventRow.event_id == event_id)) is not None

    def retry_after(self, project: str, limit: int, window_s: float) -> float | None:
        """Seconds until the project may send again, when `limit` events were taken in the last window."""
        since = _now() - timedelta(seconds=window_s)
        with Session(self.engine) as s:
            recent = select(CrashEventRow.received_at).where(CrashEventRow.project == project,
                                                              CrashEventRow.received_at > since)
            if (s.scalar(select(func.count()).select_from(recent.subquery())) or 0) < limit:
                return None
            oldest = s.scalar(select(func.min(CrashEventRow.received_at)).where(
                CrashEventRow.project == project, CrashEventRow.received_at > since))
        return max(1.0, window_s - (_now() - oldest).total_seconds()) if oldest else window_s

    def count(self, key: str, project: str, event_id: str) -> str | None:
        """Count the event on its group: the group's job id, or None when the group is new (nothing stored).
        Replayed when the event was taken before."""
        try:
            with Session(self.engine) as s, s.begin():
                job_id = s.scalar(select(CrashGroupRow.job_id).where(CrashGroupRow.key == key).with_for_update())
                if job_id is None:
                    return None
                now = _now()
                s.execute(update(CrashGroupRow).where(CrashGroupRow.key == key).values(
                    count=CrashGroupRow.count + 1, last_seen=now))
                s.add(CrashEventRow(project=project, event_id=event_id, group_key=key, received_at=now))
                return job_id
        except IntegrityError as e:  # the same event, taken meanwhile by another request
            raise Replayed(event_id) from e

    @staticmethod
    def open(s: Session, job_id: str, key: str, project: str, crash: Crash) -> None:
        """The new group of a new job, and its first event (in the transaction that makes the job)."""
        now = _now()
        s.add(CrashGroupRow(key=key, project=project, release=crash.release, job_id=job_id, title=crash.title[:300],
                            culprit=crash.culprit[:400], count=1, first_seen=now, last_seen=now))
        s.flush()
        s.add(CrashEventRow(project=project, event_id=crash.event_id, group_key=key, received_at=now))
        # Events are kept for replay detection and the rate for RETAIN_S; a new group (rare) clears older ones.
        s.execute(delete(CrashEventRow).where(CrashEventRow.received_at < now - timedelta(seconds=RETAIN_S)))
        s.flush()

    def of_jobs(self, job_ids: list[str]) -> dict[str, Group]:
        """The crash group behind each of these jobs (jobs submitted otherwise have none)."""
        if not job_ids:
            return {}
        with Session(self.engine) as s:
            rows = s.scalars(select(CrashGroupRow).where(CrashGroupRow.job_id.in_(job_ids)))
            return {r.job_id: Group(r.project, r.release, r.title, r.culprit, r.count, r.first_seen, r.last_seen)
                    for r in rows}

    def of_job(self, job_id: str) -> Group | None:
        return self.of_jobs([job_id]).get(job_id)
