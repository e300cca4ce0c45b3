"""Shared by the tests: the bundled pagination example as a repo, its fix and a production traceback of it."""

from __future__ import annotations

BUG = "min(end, len(items) + 1)"


PAGINATION = f"""def page(items, number, size=10):
    start = (number - 1) * size
    end = start + size
    return [items[i] for i in range(start, {BUG})]


def total_pages(items, size=10):
    return (len(items) + size - 1) // size
"""


TESTS = """from shop.pagination import page, total_pages


def test_first_page():
    assert page(list(range(25)), 1) == list(range(10))


def test_last_page():
    assert page(list(range(25)), 3) == [20, 21, 22, 23, 24]


def test_total():
    assert total_pages(list(range(25))) == 3
"""


FILES = {"shop/__init__.py": "", "shop/pagination.py": PAGINATION, "tests/test_pagination.py": TESTS}


FIX = ("edit_file", {"path": "shop/pagination.py", "old_text": BUG, "new_text": "min(end, len(items))"})


PRODUCTION_TB = """2026-11-30 10:00:01,122 ERROR [web] request failed: GET /orders?page=3
Traceback (most recent call last):
  File "/srv/shop/releases/2026-11-29/venv/lib/python3.11/site-packages/flask/app.py", line 880, in full_dispatch
    rv = self.dispatch_request()
  File "/srv/shop/releases/2026-11-29/shop/pagination.py", line 4, in page
    return [items[i] for i in range(start, min(end, len(items) + 1))]
                                                   ~~~~~^^^
IndexError: list index out of range
"""
