"""The second judge's box, started while pytest verifies: a fresh box that nothing runs in until the judge.

Its tree (the base plus the judged diff) is made and its box opened in a thread of its own as soon as the
diff passed the integrity checks, so the judge need not wait for a box once pytest is done; a
verification that ends before the judge closes it unused. What runs in it, and when, is unchanged
(verify/judges/second.py); only the start moves earlier. The held-out judge (verify/judges/heldout/judge.py) records
the crash's argument values on the base, draws its inputs and calls them on the base there as soon as it is open, and
calls them with the diff there after the second judge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox
from patcher.verify.job import Job
from patcher.verify.judges.heldout.judge import HeldOut
from patcher.verify.judges.observed import Seen
from patcher.verify.judges.second import judge_twice, verdict
from patcher.verify.policy.treediff import Change
from patcher.verify.records import MIN_COMPARED, Coverage, Findings, Refused, SecondJudge
from patcher.verify.testruns import TestRun

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
        """The fail-to-pass tests once more outside pytest, on the tree pytest judged them on
        (verify/judges/second.py), in
        contexts pytest does not have, with the diff's lines and the compared values watched (verify/judges/context.py,
        verify/judges/observed.py): their evidence joins `found`, and what each judge judged joins `found.coverage`. A
        judge that fails is contained: it judged nothing (never a refusal, never a pass)."""
        opened = self._opened.result()  # a failed start raises here, as opening the box here would
        self._used = True
        failed: dict[str, str] = {}
        with opened.box as box:
            source = [c for c in opened.changes if c.path not in added]
            got = _contained("second", failed, lambda: judge_twice(job, box, opened.tree, source,
                                                                    found.fail_to_pass, before))
            found.judge, seen = got if got is not None else (SecondJudge(), Seen())
            if self._held is not None:  # also when the second judge refuses: both findings are reported
                held = self._held
                _contained("held_out", failed, lambda: held.judge(box, opened.tree, opened.changes, found))
        found.evidence += seen.evidence
        found.judges.update(seen.judges)
        found.coverage = coverage(found, failed, self._held is not None)
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


T = TypeVar("T")


def _contained(name: str, failed: dict[str, str], run: Callable[[], T]) -> T | None:
    """`run()`, or None with why in `failed[name]` when the judge itself failed (a refusal passes through)."""
    try:
        return run()
    except Refused:
        raise
    except Exception as e:  # a judge's own fault is evidence of its own kind: it judged nothing
        failed[name] = f"the judge failed ({type(e).__name__}: {str(e)[:160]})"
        return None


def coverage(found: Findings, failed: dict[str, str], held: bool) -> Coverage:
    """What each judge that applies judged (records.Coverage): the second judge (a fail-to-pass test judged
    twice), the context judge (a pair of contexts compared), the held-out judge (inputs answered on both sides
    with the tested call in effect); the runtime and values judges are listed, never required."""
    out = Coverage()
    second = found.judge or SecondJudge()
    once = "; ".join(f"{j['test']}: {j['why']}" for j in second.judged_once[:2]) or "no fail-to-pass test ran"
    out.add("second", bool(second.judged_twice), failed.get("second") or f"no fail-to-pass test judged twice ({once})")
    context = found.judges.get("context") or {}
    out.add("context", int(context.get("pairs_compared") or 0) > 0, failed.get("second") or
            "no two contexts in which the base's outcome is the same could be compared")
    summary = found.judges.get("held_out") or {}
    compared = int(summary.get("compared") or 0)
    in_effect = not any(e.judge == "held_out" and e.kind == "not_in_effect" for e in found.evidence)
    why = failed.get("held_out") or (summary.get("note") if not compared else "") or (
        "called directly with the test's own arguments, the tested call still crashes as on the base" if not
        in_effect else f"only {compared} input(s) were answered on both sides (at least {MIN_COMPARED} are needed)")
    out.add("held_out", held and compared >= MIN_COMPARED and in_effect, str(why or "no recording"),
            applies=held, required=True)
    for name in ("runtime", "values"):
        ran = bool((found.judges.get(name) or {}).get("contexts" if name == "runtime" else "comparisons"))
        out.add(name, ran, "the tests did not run dressed as pytest", required=False)
    return out
