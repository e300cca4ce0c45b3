"""The outbox: deliveries and webhook messages waiting to go out, written in the transaction of the job change
that caused them (store.py's listeners), and each webhook attempt as it was made. Any node's dispatcher
claims a due row with a compare-and-set and a lease, so one row is worked on by one node at a time, and a
node that dies mid-way leaves a row another takes up once its lease lapses.

    delivery   pending ──claim──▶ running ──▶ done | failed ──retry (page, API)──▶ pending
    message    pending ──claim──▶ running ──▶ delivered | failed | pending again (backoff)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from patcher.server.db import JobRow, UtcDateTime, create_schema


class _Base(DeclarativeBase):
    pass


def create_outbox(engine: Engine) -> None:
    """The outbox's tables, made where they are missing."""
    create_schema(engine, _Base.metadata)


class DeliveryRow(_Base):
    __tablename__ = "deliveries"

    job_id: Mapped[str] = mapped_column(String(40), ForeignKey(JobRow.id), primary_key=True)
    project: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), index=True)
    commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pushed: Mapped[bool] = mapped_column(Boolean, default=False)
    pull_request: Mapped[str | None] = mapped_column(String(500), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    tries: Mapped[int] = mapped_column(default=0)
    next_at: Mapped[datetime] = mapped_column(UtcDateTime)
    claimed_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)


class MessageRow(_Base):
    __tablename__ = "webhook_messages"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(String(40), ForeignKey(JobRow.id), index=True)
    type: Mapped[str] = mapped_column(String(32))
    event: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), index=True)
    tries: Mapped[int] = mapped_column(default=0)
    next_at: Mapped[datetime] = mapped_column(UtcDateTime)
    claimed_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class AttemptRow(_Base):
    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    message_id: Mapped[str] = mapped_column(String(40), ForeignKey(MessageRow.id), index=True)
    n: Mapped[int] = mapped_column()
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    status: Mapped[int | None] = mapped_column(nullable=True)
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    duration_ms: Mapped[float] = mapped_column()


def now() -> datetime:
    return datetime.now(UTC)


def claim(s: Session, table: type[DeliveryRow] | type[MessageRow], lease_s: float, limit: int) -> list[Any]:
    """Due rows of `table` claimed for this node for `lease_s` (pending and due, or running with a lapsed lease)."""
    at = now()
    key = DeliveryRow.job_id if table is DeliveryRow else MessageRow.id
    due = or_((table.state == "pending") & (table.next_at <= at),
              (table.state == "running") & (table.claimed_until < at))
    claimed = []
    for row_key in s.scalars(select(key).where(due).order_by(table.next_at).limit(limit)).all():
        lease = at + timedelta(seconds=lease_s)
        won = s.execute(update(table).where(key == row_key, due).values(state="running", claimed_until=lease)
                        .execution_options(synchronize_session=False))
        if won.rowcount == 1:  # type: ignore[attr-defined]
            claimed.append(s.get_one(table, row_key))
    return claimed
