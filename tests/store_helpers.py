"""Fixtures shared by the store and worker-pool tests: a fresh SQLite file and a Store on it.

Test modules load them with `pytest_plugins = ["tests.store_helpers"]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from patcher.store import Store


@pytest.fixture()
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


@pytest.fixture()
def store(url: str) -> Iterator[Store]:
    s = Store(url)
    yield s
    s.close()
