"""Stopping a running job now, not at its next checkpoint: a cancel flag and wall-clock deadlines that hold
while a model call or a tool call blocks.

A Stopper belongs to one job. Its boxes are registered as they open (`watch`); when the cancel flag is
raised, a watcher thread kills every one of them at once, so whatever blocks on a box (a tool call, a test
run, the baseline, verification) fails within moments, and the job ends with `Cancelled`. A model call
cannot be killed that way, so it runs in a helper thread (`wait_for`) that is abandoned when the flag is
raised or the deadline passes; its late answer is dropped.

    Cancelled (errors.py)  the flag was raised: the job ends with reason `cancelled`
    Overrun                a wall-clock deadline passed while waiting: the caller ends with reason `timeout`
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from patcher.errors import Cancelled

T = TypeVar("T")
POLL_S = 0.05


class Overrun(Exception):
    """The wall-clock deadline passed while a call was still running (the call is abandoned)."""


class Stopper:
    def __init__(self, flag: threading.Event | None = None, parent: Stopper | None = None) -> None:
        self.flag = flag or threading.Event()
        self.parent = parent
        """A side of a job (auto mode's two engines) stops with its job too, and may be stopped alone."""
        self._boxes: list[Any] = []
        self._killed: set[int] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def cancelled(self) -> bool:
        return self.flag.is_set() or (self.parent is not None and self.parent.cancelled)

    def check(self) -> None:
        """Raises Cancelled once the flag (or the parent's) is up (called between steps)."""
        if self.cancelled:
            raise Cancelled("the job was cancelled while it ran")

    def watch(self, box: T) -> T:
        """Registers a box to kill on cancel (at once, when the job is already cancelled)."""
        with self._lock:
            self._boxes.append(box)
            if self._watcher is None:  # started with the first box: a Stopper with no boxes costs no thread
                self._watcher = threading.Thread(target=self._watch, name="patcher-stopper", daemon=True)
                self._watcher.start()
        if self.cancelled:
            self.kill(box)
        return box

    def kill(self, box: Any) -> None:
        """Kills the box (SIGKILL, no grace; Sandbox.kill): calls blocked on it fail at once."""
        with self._lock:
            if id(box) in self._killed:
                return
            self._killed.add(id(box))
        box.kill()

    def killed(self, box: Any) -> bool:
        with self._lock:
            return id(box) in self._killed

    def wait_for(self, fn: Callable[[], T], deadline: float | None = None) -> T:
        """fn() in a helper thread; Cancelled when the flag rises, Overrun past `deadline` (monotonic)."""
        outcome: dict[str, Any] = {}
        finished = threading.Event()

        def run() -> None:
            try:
                outcome["value"] = fn()
            except BaseException as e:  # handed to the waiting thread, which raises it there
                outcome["error"] = e
            finally:
                finished.set()

        context = contextvars.copy_context()  # the run id and the telemetry span go along
        threading.Thread(target=context.run, args=(run,), name="patcher-call", daemon=True).start()
        while not finished.wait(POLL_S):
            self.check()
            if deadline is not None and time.monotonic() >= deadline:
                raise Overrun("the wall-clock limit passed during the call")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.is_set():
            if self.flag.wait(POLL_S * 4) or self.cancelled:
                with self._lock:
                    boxes = list(self._boxes)
                for box in boxes:
                    self.kill(box)
                return
