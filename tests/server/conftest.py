"""The server tests' shared fixture: headless Chromium for the review pages."""

from tests.support.browser import browser

__all__ = ["browser"]
