"""Lanes (repair/lanes.py): checks on two boxes at once, results in candidate order, the second box closed."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from patcher.errors import SandboxError
from patcher.repair.checks import Checker
from patcher.repair.lanes import Lanes


class Box:
    def __init__(self, name: str) -> None:
        self.name, self.closed = name, False


def test_results_come_in_candidate_order_from_both_boxes() -> None:
    second = Box("second")

    @contextlib.contextmanager
    def open_box() -> Iterator[Any]:
        yield second
        second.closed = True

    seen: dict[int, str] = {}
    lock = threading.Lock()

    def job(n: int, checker: Checker) -> int:
        time.sleep(0.05 if n % 3 == 0 else 0.01)  # some checks slower than the next ones
        with lock:
            seen[n] = checker.box.name  # type: ignore[attr-defined]
        return n * n

    lanes = Lanes(Checker(Box("first"), warm=False), open_box, warm=False, spare=lambda: True)  # type: ignore[arg-type]
    try:
        got = [(n, result) for n, result, _ in lanes.in_order(iter(range(12)), job)]
    finally:
        lanes.close()
    assert got == [(n, n * n) for n in range(12)]
    assert set(seen.values()) == {"first", "second"} and second.closed


def test_stopping_early_waits_for_the_check_in_flight_and_drops_the_rest() -> None:
    started: list[int] = []

    def job(n: int, checker: Checker) -> int:
        started.append(n)
        time.sleep(0.02)
        return n

    lanes = Lanes(Checker(Box("first"), warm=False), None, warm=False)  # type: ignore[arg-type]
    for n, _, _ in lanes.in_order(iter(range(100)), job):
        if n == 2:
            break
    lanes.close()
    assert started == [0, 1, 2]


def test_a_second_box_that_cannot_open_leaves_one_lane() -> None:
    def open_box() -> Any:
        raise SandboxError("no room")

    lanes = Lanes(Checker(Box("first"), warm=False), open_box, warm=False, spare=lambda: True)  # type: ignore[arg-type]
    try:
        assert [r for _, r, _ in lanes.in_order(iter(range(5)), lambda n, c: n + 1)] == [1, 2, 3, 4, 5]
    finally:
        lanes.close()
    assert len(lanes.checkers) == 1


def test_a_short_search_or_a_busy_machine_opens_no_second_box() -> None:
    opened: list[str] = []

    @contextlib.contextmanager
    def open_box() -> Iterator[Any]:
        opened.append("second")
        yield Box("second")

    short = Lanes(Checker(Box("first"), warm=False), open_box, warm=False, spare=lambda: True)  # type: ignore[arg-type]
    try:
        assert [r for _, r, _ in short.in_order(iter(range(2)), lambda n, c: n)] == [0, 1]
    finally:
        short.close()
    busy = Lanes(Checker(Box("first"), warm=False), open_box, warm=False, spare=lambda: False)  # type: ignore[arg-type]
    try:
        assert [r for _, r, _ in busy.in_order(iter(range(10)), lambda n, c: n)] == list(range(10))
    finally:
        busy.close()
    assert opened == [] and len(short.checkers) == len(busy.checkers) == 1
