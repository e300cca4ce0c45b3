"""The tables under the store and the event log, and how a database is opened and its schema made."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, MetaData, String, Text, create_engine, event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from patcher.config import patcher_home


class UtcDateTime(TypeDecorator[datetime]):
    """Naive UTC in the database, aware UTC in Python, so every backend compares the same."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.astimezone(UTC).replace(tzinfo=None) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None else None


class Base(DeclarativeBase):
    pass


class JobRow(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    state: Mapped[str] = mapped_column(String(16), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(default=0)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    claim_token: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    submitter: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)


class ReviewRow(Base):
    __tablename__ = "reviews"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    decision: Mapped[str] = mapped_column(String(16))
    comment: Mapped[str] = mapped_column(Text, default="")
    who: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


def default_url() -> str:
    home = patcher_home()
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'patcher.db'}"


def sqlite_engine(url: str, busy_timeout_s: float) -> Engine:
    engine = create_engine(url, connect_args={"timeout": busy_timeout_s, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


SCHEMA_LOCK = 0x7061_7463_6865_72
"""PostgreSQL advisory lock held while the tables are made (any fixed number shared by every node)."""


def create_schema(engine: Engine, metadata: MetaData) -> None:
    """Make missing tables once, also when many processes start on one new database at the same moment:
    PostgreSQL takes an advisory lock for it; SQLite's BEGIN IMMEDIATE already lets one writer in."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        metadata.create_all(conn)
        if "jobs" in metadata.tables:
            _add_missing_columns(conn)


def _add_missing_columns(conn: Connection) -> None:
    """Databases made before a column was added get it (nullable, so old rows stay valid)."""
    have = {c["name"] for c in inspect(conn).get_columns("jobs")}
    if "submitter" not in have:
        conn.exec_driver_sql("ALTER TABLE jobs ADD COLUMN submitter VARCHAR(64)")
