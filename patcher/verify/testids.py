"""Test ids compared across runs by what stays the same between processes.

A parametrized test's id can carry a memory address: pytest's `ids=str` (or `repr`) of an object without a
`__str__` of its own gives `test_naturalday[test_args8-<tests.test_time.FakeDate object at 0x7fa6b62250d0>]`
(humanize), and the address is another one in every process. Compared as they are, such a test that passed on
the base and passes with the diff is "lost" and refused as a regression. The base and the patched runs are
therefore compared with every hexadecimal address in the ids replaced by one placeholder; the ids reported
(and rerun by node id) stay the ones the runs gave.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")


def stable(test_id: str) -> str:
    """`test_id` with every memory address replaced by `0x…`."""
    return _ADDRESS.sub("0x…", test_id)


def missing(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """The tests of `before` that are not among `after`, compared by stable ids (sorted, as `before` names them)."""
    there = {stable(t) for t in after}
    return sorted(t for t in before if stable(t) not in there)


def kept(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """The tests of `before` that are among `after`, compared by stable ids (sorted, as `before` names them)."""
    there = {stable(t) for t in after}
    return sorted(t for t in before if stable(t) in there)
