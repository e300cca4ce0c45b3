"""One engine of auto mode, run beside the other: its own thread, its own boxes and its own Stopper.

A Side's Stopper is a child of the job's (a cancelled job stops both sides), and `stop()` stops this side
alone: its boxes are killed at once, so whatever blocks on them fails within moments, and its ending is
then `stopped`, never a verdict. `cpus` bounds the side's boxes (Docker's nano_cpus, and a low cpu_shares
weight): the template search works beside the agent on a share of the job's CPU, and on none of what the
agent's own runs (its verification) need.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Generic, TypeVar

from patcher.intake import StagedRepo
from patcher.sandbox import DockerBoxes, OpenBox, Sandbox
from patcher.stopper import Stopper
from patcher.verify import Job

T = TypeVar("T")
LOW_SHARES = 64
"""A bounded side's CPU weight (Docker's default is 1024): beside the agent's runs it gets a sixteenth of the
CPU they contend for, and all of what they leave idle."""


class Side(Generic[T]):
    def __init__(self, job: Job, parent: Stopper, cpus: float | None = None) -> None:
        self.stopper = Stopper(parent=parent)
        self.job = replace(job, open_box=_boxes(job.open_box, self.stopper, cpus))
        self.result: T | None = None
        self.error: BaseException | None = None
        self.stopped_by = ""
        """Why this side was stopped before it ended on its own (empty: it was not)."""
        self.seconds = 0.0
        self._done = threading.Event()
        self._on_done: Callable[[Side[T]], None] | None = None

    def run(self, body: Callable[[Job, Stopper], T]) -> Side[T]:
        """body(job, stopper) here, in this thread."""
        started = time.monotonic()
        try:
            self.result = body(self.job, self.stopper)
        except BaseException as e:  # kept for the caller to judge: a stopped side's error is no verdict
            self.error = e
        finally:
            self.seconds = time.monotonic() - started
            self.stopper.close()
            self._done.set()
        if self._on_done is not None:
            self._on_done(self)
        return self

    def start(self, body: Callable[[Job, Stopper], T], on_done: Callable[[Side[T]], None]) -> Side[T]:
        """body(job, stopper) in a thread of its own; on_done(self) there when it ends."""
        self._on_done = on_done
        context = contextvars.copy_context()  # the run id and the telemetry span go along
        threading.Thread(target=context.run, args=(self.run, body), name="patcher-side", daemon=True).start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def stop(self, why: str) -> None:
        """Kills this side's boxes (its later steps raise Cancelled); `why` is reported as its stop."""
        if not self.done:
            self.stopped_by = self.stopped_by or why
        self.stopper.flag.set()

    def wait(self) -> Side[T]:
        self._done.wait()
        return self


def _boxes(boxes: OpenBox, stopper: Stopper, cpus: float | None) -> OpenBox:
    """The job's box factory, its boxes also watched by this side's stopper (and bounded to `cpus`)."""
    if isinstance(boxes, DockerBoxes):
        cfg = boxes.config if cpus is None else boxes.config.model_copy(
            update={"cpus": min(cpus, boxes.config.cpus), "cpu_shares": LOW_SHARES})
        boxes.pool.warm(cfg)
        return replace(boxes, config=cfg, stopper=stopper)  # the side's stopper is the job's child

    def opened(tree: StagedRepo) -> AbstractContextManager[Sandbox]:
        stopper.check()
        return stopper.watch(boxes(tree))

    return opened
