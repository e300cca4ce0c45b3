"""Shared by the tests: headless Chromium for the review-page tests (the fixture reaches tests/server/
through its conftest.py) and where screenshots go."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"


ARTIFACTS = Path(os.environ.get("PATCHER_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "artifacts")
"""Where the screenshot goes (the repo's artifacts/ is git-ignored)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium; skips (or fails, when CI=true) if Debian's chromium is not installed."""
    if not (Path(CHROMIUM).exists() and shutil.which(CHROMIUM)):
        message = f"{CHROMIUM} is missing: install Debian's chromium package (scripts/setup.sh does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires a browser, but {message}")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()
