"""The judges' box, started while pytest verifies: a fresh box that nothing of the diff runs in until the judges. Its
tree (the base plus the judged diff) is made and its box opened in a thread of its own as soon as the diff passed
the integrity checks, so the judges need not wait for a box once pytest is done; a verification that ends before the
judges closes it unused. Only the base's code runs there before pytest has passed the diff: the held-out judge
(heldout/judge.py) records the crash's argument values on the base, draws its inputs and calls them on the base as
soon as it is open (the engine is done by then), and then the judges' run outside pytest makes its base half
(judges/asked.py: the base-failing tests, which are the fail-to-pass ones whenever the judges run). After pytest the
held-out judge goes on in this box, in a thread of its own (what it had not finished beside pytest, then its calls
with the diff), while the judges of the box phase run in the order JUDGES gives (judges/__init__.py) in a second
fresh box on the same tree, where the judges' run outside pytest is made (its base half first, where it had not
begun beside pytest): no code of the diff's ran in that box before it, and the held-out calls (one process at a
time) share the two cores with the run's two contexts.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox
from patcher.verify.job import Job
from patcher.verify.judges import Judging, coverage, run
from patcher.verify.judges.asked import on_base
from patcher.verify.judges.heldout.judge import HeldOut
from patcher.verify.judges.turns import Turns
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
        self._held, self._early, self._open_box = held, (job, before), open_box
        self._shared: dict[str, Any] = {}
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._late = self._base_begun = False
        self._turns = Turns()  # its threads take turns on the host, and wait on their boxes together (turns.py)
        self._prepared: Future[Prepared] = Future()
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="patcher-judge-box")
        self._opened: Future[_Opened] = self._runner.submit(self._open, open_box, prepare, held)
        self._runner.shutdown(wait=False)
        self._used = False

    def _open(self, open_box: OpenBox, prepare: Callable[[], Prepared], held: HeldOut | None) -> _Opened:
        """The box, and in it what needs no verdict of pytest's: the held-out judge's recording on the base, then
        the base's half of the judges' run (skipped once pytest is done: the run's own box makes it then). The
        tree is removed by close(), whoever used it."""
        try:
            tree, changes = prepare()
        except BaseException as e:
            self._prepared.set_exception(e)
            raise
        self._prepared.set_result((tree, changes))
        box = open_box(tree)
        try:
            with self._turns:  # every box's __enter__ returns itself, once or twice
                if held is not None:
                    held.prepare(self._turns.box(box.__enter__()), tree, changes)
                self._base_half(self._turns.box(box.__enter__()), tree, changes)
        except BaseException:
            box.__exit__(None, None, None)
            raise
        return _Opened(tree, changes, box)

    def _base_half(self, box: Any, tree: StagedRepo, changes: list[Change]) -> None:
        """The judges' run on the base, for the tests that failed on the base, while pytest verifies; a fault here
        is left to the judge that needs the run (it makes it again after pytest, and contains its own faults)."""
        job, before = self._early
        with self._lock:
            if job is None or before is None or self._closing.is_set() or self._late:
                return
            self._base_begun = True
        added = set(self._held.added if self._held is not None else [])
        with contextlib.suppress(Exception):
            self._shared["base_run"] = on_base(job, box, tree, [c for c in changes if c.path not in added],
                                               sorted(before.failed), serial=True)

    def judge(self, job: Job, added: list[str], found: Findings, before: TestRun) -> None:
        """The judges of the box phase in order (judges.JUDGES), on the tree pytest judged: their evidence joins
        `found`, what each judged `found.coverage`; then the gravest refusal among them, if any."""
        waiting = time.monotonic()
        if self._held is None:
            opened = self._opened.result()  # a failed start raises here, as opening the box here would
            found.judges_waited_s = time.monotonic() - waiting
            self._used = True
            with opened.box as box:
                judged = run("box", Judging(job, found, opened.changes, added, before, box, opened.tree,
                                            shared=self._shared))
        else:
            judged = self._apart(job, added, found, before, waiting)
        found.coverage = coverage(judged)
        found.refuse_on_evidence()

    def _apart(self, job: Job, added: list[str], found: Findings, before: TestRun, waiting: float) -> dict[str, Any]:
        """pytest is done. The held-out judge goes on in the judges' box (its recording, then its calls with the
        diff: `HeldOut.begin`); the other judges run meanwhile in a fresh box of their own on the same tree, where
        the judges' run outside pytest is made (its base half too, where it had not begun beside pytest)."""
        with self._lock:
            self._late, begun = True, self._base_begun
        tree, changes = self._prepared.result()  # a failed start raises here, as opening the box here would
        turns = self._turns
        if begun:  # under way in the judges' box: the run waits for it rather than make it again
            self._shared["base_run_wait"] = self._base_run
        self._held.begin(self._held_box, turns, self._open_box)  # type: ignore[union-attr]
        try:
            with self._open_box(tree) as box, turns:
                found.judges_waited_s = time.monotonic() - waiting
                return run("box", Judging(job, found, changes, added, before, turns.box(box), tree, self._held,
                                          shared=self._shared))
        finally:  # a refusal before the held-out judge's turn: its box is closed under its calls, which end at once
            with contextlib.suppress(Exception):
                self._opened.result().box.__exit__(None, None, None)
            self._used = True
            self._held.settle()  # type: ignore[union-attr]

    def _base_run(self) -> None:
        """Waits (the host's turn given up) for the base's half under way in the judges' box."""
        with self._turns.waiting():
            wait([self._opened])

    def _held_box(self) -> tuple[Any, StagedRepo, list[Change]]:
        """The judges' box once its work beside pytest is done, for the held-out judge's calls with the diff."""
        opened = self._opened.result()
        return opened.box.__enter__(), opened.tree, opened.changes

    def close(self) -> None:
        """The box (closed, used or not) and its tree removed; waits for a start still under way (no base run
        starts once this is called)."""
        self._closing.set()
        with contextlib.suppress(Exception):
            opened = self._opened.result()
            if not self._used:
                opened.box.__exit__(None, None, None)
        with contextlib.suppress(Exception):  # a start that failed before its tree was made left nothing
            self._prepared.result()[0].cleanup()
