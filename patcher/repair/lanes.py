"""Candidate checks on more than one box at once, results taken in candidate order.

The search's own box is the first lane. Once a search has had OPEN_AFTER results without ending (a short
search never pays for it), and where the machine has a core to spare (a second box on a machine whose
cores are busy only slows the first), a second box is opened in the background (it costs a container
start, a copy of the repo and its warm interpreter's imports) and joins when ready. Checks are
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


OPEN_AFTER = 3
"""Results read before a second box is opened."""


def lane_count() -> int:
    """Two boxes where there are two cores or more; one otherwise."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def core_to_spare() -> bool:
    """The last minute's load leaves a core idle (another box would have it to itself)."""
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    except OSError:
        return False


class Lanes:
    def __init__(self, first: Checker, open_box: Callable[[], AbstractContextManager[Sandbox]] | None,
                 warm: bool, prewarm: str | None = None, spare: Callable[[], bool] = core_to_spare) -> None:
        self.checkers = [first]
        self._free: queue.Queue[Checker] = queue.Queue()
        self._free.put(first)
        self._boxes = contextlib.ExitStack()
        self._pool = ThreadPoolExecutor(max_workers=2 if open_box else 1, thread_name_prefix="offline-check")
        self._open_box, self._warm, self._prewarm, self._spare = open_box, warm, prewarm, spare
        self._opening: Future[None] | None = None

    def _maybe_open(self, results: int) -> None:
        if self._open_box and not self._opening and results >= OPEN_AFTER and self._spare():
            self._opening = self._pool.submit(self._open, self._open_box)

    def _open(self, open_box: Callable[[], AbstractContextManager[Sandbox]]) -> None:
        try:
            box = self._boxes.enter_context(open_box())
        except (EnvironmentUnavailable, SandboxError, OSError):
            return  # one lane it is
        checker = Checker(box, self._warm)
        if self._prewarm:
            checker.prewarm(self._prewarm)
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

        results = 0
        for item in items:
            pending.append((item, self.run(timed(item))))
            while len(pending) > (2 if self._opening else 1) - 1:
                done, future = pending.popleft()
                result, seconds = future.result()
                results += 1
                self._maybe_open(results)
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
