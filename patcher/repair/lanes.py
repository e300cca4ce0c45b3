"""Candidate checks on more than one box at once, results taken in candidate order.

The search's own box is the first lane. Where the machine has cores to spare, a second box is opened in
the background (it costs a container start and a copy of the repo) and joins when ready. Checks are
handed out ahead, at most one per lane beyond the one being read, and their results are read strictly
in the order the candidates came, so the choice is the one a single box would make: a parallel run
only wastes the checks that were in flight when the search stopped. Each box has its own copy of the
repo, so a candidate written into one is never seen by a check in another.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TypeVar

from patcher.errors import EnvironmentUnavailable, SandboxError
from patcher.repair.checks import Checker
from patcher.sandbox import Sandbox

T = TypeVar("T")
C = TypeVar("C")


def lane_count() -> int:
    """Two boxes where there are two cores or more; one otherwise."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


class Lanes:
    def __init__(self, first: Checker, open_box: Callable[[], AbstractContextManager[Sandbox]] | None,
                 warm: bool) -> None:
        self.checkers = [first]
        self._free: queue.Queue[Checker] = queue.Queue()
        self._free.put(first)
        self._boxes = contextlib.ExitStack()
        self._pool = ThreadPoolExecutor(max_workers=2 if open_box else 1, thread_name_prefix="offline-check")
        self._opening = self._pool.submit(self._open, open_box, warm) if open_box else None

    def _open(self, open_box: Callable[[], AbstractContextManager[Sandbox]], warm: bool) -> None:
        try:
            box = self._boxes.enter_context(open_box())
        except (EnvironmentUnavailable, SandboxError, OSError):
            return  # one lane it is
        checker = Checker(box, warm)
        self.checkers.append(checker)
        self._free.put(checker)

    def run(self, job: Callable[[Checker], T]) -> Future[T]:
        def on_free_lane() -> T:
            checker = self._free.get()
            try:
                return job(checker)
            finally:
                self._free.put(checker)
        return self._pool.submit(on_free_lane)

    def in_order(self, items: Iterator[C], job: Callable[[C, Checker], T]) -> Iterator[tuple[C, T, float]]:
        """(item, result, seconds of its check) in the items' order, with one check ahead per spare lane."""
        pending: deque[tuple[C, Future[tuple[T, float]]]] = deque()

        def timed(item: C) -> Callable[[Checker], tuple[T, float]]:
            def go(checker: Checker) -> tuple[T, float]:
                at = time.monotonic()
                return job(item, checker), time.monotonic() - at
            return go

        for item in items:
            pending.append((item, self.run(timed(item))))
            while len(pending) > (2 if self._opening else 1) - 1:
                done, future = pending.popleft()
                result, seconds = future.result()
                yield done, result, seconds
        while pending:
            done, future = pending.popleft()
            result, seconds = future.result()
            yield done, result, seconds

    @property
    def warm_runs(self) -> int:
        return sum(c.warm_runs for c in self.checkers)

    def close(self) -> None:
        """Drop checks not started, wait for those running (they put their files back), close the extra box."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._boxes.close()
