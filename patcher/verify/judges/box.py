"""The judges' box, started while pytest verifies: a fresh box that nothing of the diff runs in until the judges.

Its tree (the base plus the judged diff) is made and its box opened in a thread of its own as soon as the diff
passed the integrity checks, so the judges need not wait for a box once pytest is done; a verification that ends
before the judges closes it unused. Only the base's code runs there before pytest has passed the diff: the
held-out judge (heldout/judge.py) records the crash's argument values on the base, draws its inputs and calls them
on the base as soon as it is open (the engine is done by then), and then the judges' run outside pytest makes its
base half (judges/asked.py: the base-failing tests, which are the fail-to-pass ones whenever the judges run);
after pytest, the judges of the box phase run there in the order JUDGES gives (judges/__init__.py). The held-out
judge's calls with the diff begin first, in a thread of their own, in this box; the diff's half of the judges' run
is made meanwhile in a fresh box of its own on the same tree, where no code of the diff's ran before it (two cores:
the held-out calls run one process at a time, the run's two contexts side by side).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox
from patcher.verify.job import Job
from patcher.verify.judges import Judging, coverage, run
from patcher.verify.judges.asked import on_base
from patcher.verify.judges.heldout.judge import HeldOut
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Findings
from patcher.verify.testruns import TestRun

Prepared = tuple[StagedRepo, list[Change]]


@dataclass
class _Opened:
    tree: StagedRepo
    changes: list[Change]
    box: Any
    """The factory's context manager, already constructed (started); entered by whoever uses it."""


class JudgeBox:
    def __init__(self, open_box: OpenBox, prepare: Callable[[], Prepared], held: HeldOut | None = None,
                 job: Job | None = None, before: TestRun | None = None) -> None:
        self._held, self._early = held, (job, before)
        self._shared: dict[str, Any] = {}
        self._closing = threading.Event()
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="patcher-judge-box")
        self._opened: Future[_Opened] = self._runner.submit(self._open, open_box, prepare, held)
        self._runner.shutdown(wait=False)
        self._used = False

    def _open(self, open_box: OpenBox, prepare: Callable[[], Prepared], held: HeldOut | None) -> _Opened:
        """The box, and in it what needs no verdict of pytest's: the held-out judge's recording on the base, then
        the base's half of the judges' run (skipped once the verification has ended)."""
        tree, changes = prepare()
        try:
            box = open_box(tree)
        except BaseException:
            tree.cleanup()
            raise
        try:
            if held is not None:
                held.prepare(box.__enter__(), tree, changes)  # every box's __enter__ returns itself, once or twice
            self._base_half(box.__enter__(), tree, changes)
        except BaseException:
            box.__exit__(None, None, None)
            tree.cleanup()
            raise
        return _Opened(tree, changes, box)

    def _base_half(self, box: Any, tree: StagedRepo, changes: list[Change]) -> None:
        """The judges' run on the base, for the tests that failed on the base; a fault here is left to the judge
        that needs the run (it makes it again after pytest, and contains its own faults)."""
        job, before = self._early
        if job is None or before is None or self._closing.is_set():
            return
        added = set(self._held.added if self._held is not None else [])
        with contextlib.suppress(Exception):
            self._shared["base_run"] = on_base(job, box, tree, [c for c in changes if c.path not in added],
                                               sorted(before.failed), serial=True)

    def judge(self, job: Job, added: list[str], found: Findings, before: TestRun) -> None:
        """The judges of the box phase in order (judges.JUDGES), on the tree pytest judged: their evidence joins
        `found`, what each judged `found.coverage`; then the gravest refusal among them, if any."""
        waiting = time.monotonic()
        opened = self._opened.result()  # a failed start raises here, as opening the box here would
        found.judges_waited_s = time.monotonic() - waiting  # the work beside pytest still under way
        self._used = True
        try:
            with opened.box as box:
                ctx = Judging(job, found, opened.changes, added, before, box, opened.tree, self._held,
                              shared=self._shared)
                if self._held is not None and self._held.asks():  # its calls with the diff begin now, in this
                    # box; the judges' run outside pytest is made meanwhile in a fresh box of its own (asked.py)
                    self._shared["apart"] = lambda: job.open_box(opened.tree)
                    self._held.begin(box, opened.tree, opened.changes)
                judged = run("box", ctx)
        finally:  # a refusal before the held-out judge's turn closed the box under its calls: they end at once
            if self._held is not None:
                self._held.settle()
        found.coverage = coverage(judged)
        found.refuse_on_evidence()

    def close(self) -> None:
        """The box (closed, used or not) and its tree removed; waits for a start still under way (no base run
        starts once this is called)."""
        self._closing.set()
        with contextlib.suppress(Exception):  # a start that failed left nothing (see _open)
            opened = self._opened.result()
            try:
                if not self._used:
                    opened.box.__exit__(None, None, None)
            finally:
                opened.tree.cleanup()

