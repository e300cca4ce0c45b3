"""Turns on the host for the judges' two threads after pytest (judges/box.py): the held-out judge's in the judges'
box, the other judges' in a box of their own.

Only their waits on a box overlap; their work on the host takes turns. CPython 3.11's AST conversion is not
thread-safe (two judges parsing at once raised `SystemError: AST constructor recursion depth mismatch` on a real
case), nor is everything the judges read on the host. A thread holds the turn while it computes and gives it up
while a box answers it (`box`) or while it waits for the other thread (`waiting`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from patcher.sandbox import Sandbox
from sandbox.protocol import Request, ToolResult


class Turns:
    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> Turns:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """The turn given up (held by the caller) while the caller waits for the other thread."""
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()

    def box(self, box: Sandbox) -> Sandbox:
        """`box`, whose calls give the turn up while the box answers them."""
        return _Waits(box, self)  # type: ignore[return-value]


class _Waits:
    def __init__(self, box: Sandbox, turns: Turns) -> None:
        self._box, self._turns = box, turns

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult:
        with self._turns.waiting():
            return self._box.call(request, deadline_s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._box, name)
