"""Fixtures shared by the store and worker-pool tests: a fresh database and a Store on it, once on a SQLite
file and once on the real PostgreSQL server that scripts/postgres.sh starts (a new database per test).

Test modules load them with `pytest_plugins = ["tests.support.store_helpers"]`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from patcher.server.store import Store

PG_URL = os.environ.get("PATCHER_TEST_PG_URL") or "postgresql+psycopg://postgres@/postgres?host=/tmp/patcher-pg&port=54329"


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    """The test server's maintenance database; skips (fails under CI=true) when no server answers."""
    engine = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except (SQLAlchemyError, ImportError) as e:
        engine.dispose()
        reason = f"no PostgreSQL answers at {PG_URL} ({type(e).__name__}); run scripts/postgres.sh"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires the test PostgreSQL server: {reason}")
        pytest.skip(reason)
    yield engine
    engine.dispose()


@pytest.fixture()
def pg_url(pg_admin: Engine) -> Iterator[str]:
    """A new empty database on the test server, dropped afterwards."""
    name = f"patcher_t_{secrets.token_hex(6)}"
    with pg_admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    with pg_admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture()
def store(url: str) -> Iterator[Store]:
    s = Store(url)
    yield s
    s.close()
