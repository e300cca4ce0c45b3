"""The second judge's box, started while pytest verifies: a fresh box that nothing runs in until the judge.

Its tree (the base plus the judged diff) is made and its box opened in a thread of its own as soon as the
diff passed the integrity checks, so the judge need not wait for a box once pytest is done; a
verification that ends before the judge closes it unused. What runs in it, and when, is unchanged
(twice.py); only the start moves earlier. The held-out judge (heldout.py) records the crash's argument values
on the base, draws its inputs and calls them on the base there as soon as it is open, and calls them with the
diff there after the second judge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox
from patcher.verify.heldout import HeldOut
from patcher.verify.job import Job
from patcher.verify.records import Findings
from patcher.verify.testruns import TestRun
from patcher.verify.treediff import Change
from patcher.verify.twice import judge_twice, verdict

Prepared = tuple[StagedRepo, list[Change]]


@dataclass
class _Opened:
    tree: StagedRepo
    changes: list[Change]
    box: Any
    """The factory's context manager, already constructed (started); entered by whoever uses it."""


class JudgeBox:
    def __init__(self, open_box: OpenBox, prepare: Callable[[], Prepared], held: HeldOut | None = None) -> None:
        self._held = held
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="patcher-judge-box")
        self._opened: Future[_Opened] = self._runner.submit(self._open, open_box, prepare, held)
        self._runner.shutdown(wait=False)
        self._used = False

    @staticmethod
    def _open(open_box: OpenBox, prepare: Callable[[], Prepared], held: HeldOut | None) -> _Opened:
        """The box, and in it (the held-out judge's recording on the base) what needs no verdict of pytest's."""
        tree, changes = prepare()
        try:
            box = open_box(tree)
        except BaseException:
            tree.cleanup()
            raise
        try:
            if held is not None:
                held.prepare(box.__enter__(), tree, changes)  # every box's __enter__ returns itself, once or twice
        except BaseException:
            box.__exit__(None, None, None)
            tree.cleanup()
            raise
        return _Opened(tree, changes, box)

    def judge(self, job: Job, added: list[str], found: Findings, before: TestRun) -> None:
        """The fail-to-pass tests once more outside pytest, on the tree pytest judged them on (twice.py), in
        contexts pytest does not have, with the diff's lines and the compared values watched (contexts.py,
        observed.py): their evidence joins `found`."""
        opened = self._opened.result()  # a failed start raises here, as opening the box here would
        self._used = True
        with opened.box as box:
            found.judge, seen = judge_twice(job, box, opened.tree, [c for c in opened.changes if c.path not in added],
                                            found.fail_to_pass, before)
            if self._held is not None:  # also when the second judge refuses: both findings are reported
                self._held.judge(box, opened.tree, opened.changes, found)
        found.evidence += seen.evidence
        found.judges.update(seen.judges)
        found.refuse_on_evidence()  # what the diff was seen doing comes before the judges' disagreement
        verdict(found.judge, job)

    def close(self) -> None:
        """The box (closed, used or not) and its tree removed; waits for a start still under way."""
        with contextlib.suppress(Exception):  # a start that failed left nothing (see _open)
            opened = self._opened.result()
            try:
                if not self._used:
                    opened.box.__exit__(None, None, None)
            finally:
                opened.tree.cleanup()
