"""The held-out judge: inputs generated after the engine is done, from the crash's own argument values, on which
the patched code is judged against the base (the rules: heldout/rules.py).

In the judges' box (judges/box.py), as soon as it is open, while pytest verifies elsewhere (the engine is done by
then), on the base:
1. `record` (sandbox/judge/heldout/record.py): the tests that failed on the base, under pytest in a fresh copy of the
   tree, with a trace hook that notes the crash's own argument values as each call took them;
2. for each such test (up to RECORDED_TESTS) the tested call: the function whose frame holds the change
   (heldout/target.py); inputs drawn by Hypothesis from its values (heldout/strategies.py);
3. the inputs asked inside the test's own run (heldout/inrun.py), on the base's files; and, where the tested call
   can be made again by name from plain data, called so too (heldout/plain.py: order and state show there;
   what those calls refuse by their own draws is put to the test's run first: heldout/confirm.py).
After pytest, the same with the diff, with the path each call takes through the diff's own lines: begun as the
judges' phase begins, in a thread of its own, while the judges before it run in a box of their own (judges/box.py:
nothing the diff's code does in this box reaches the run they read). No engine sees the inputs: they are
drawn here, after the engine has finished, anew each verification.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from patcher.errors import SandboxError
from patcher.intake import StagedRepo
from patcher.sandbox import OpenBox, Sandbox
from patcher.verify.job import Job
from patcher.verify.judges.asked import node_id
from patcher.verify.judges.heldout import inrun
from patcher.verify.judges.heldout.confirm import confirmed
from patcher.verify.judges.heldout.dimensions import keyed, made_again, magnified, padded, recased, retyped
from patcher.verify.judges.heldout.inrun import InRun
from patcher.verify.judges.heldout.order import COMPARED, rearrangements
from patcher.verify.judges.heldout.plain import RECORD_S, Drawn, PlainCalls, ask_box, diff_lines, put_back
from patcher.verify.judges.heldout.rules import judge
from patcher.verify.judges.heldout.target import Call, choose, constants, expected_values, in_run
from patcher.verify.judges.turns import Turns
from patcher.verify.policy.rules import is_test_path
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Evidence

RECORDED_TESTS = 3
INPUTS = 96
"""Inputs drawn per tested call: enough that a guard on a range or a shape meets inputs on both sides of it in
most draws (48 let a range around the tested amount through in some)."""
MAX_LOADED = 3000


class HeldOut:
    def __init__(self, job: Job, failing: set[str], added: list[str]) -> None:
        self.job, self.added = job, added
        self.failing = sorted(failing)[:RECORDED_TESTS]
        self.plain: PlainCalls | None = None
        self.runs: list[InRun] = []
        self.note = ""
        self.unfit = ""
        """Why the judge does not apply: every failing test's own call fails on the base before the function runs
        (a keyword or an argument the base's signature does not take: the fix adds it)."""
        self.alongside_s = 0.0
        self._begun: Future[tuple[list[Evidence], dict[str, Any]]] | None = None
        self._tree: tuple[StagedRepo, list[Change]] | None = None
        self._turns: Turns | None = None

    def asks(self) -> bool:
        """Whether the judge has calls to ask with the diff (else it judges nothing in the box)."""
        return bool(self.runs or self.plain) and not self.unfit

    def begin(self, judges_box: Callable[[], tuple[Sandbox, StagedRepo, list[Change]]], turns: Turns,
              fresh: OpenBox | None = None) -> None:
        """The diff's side (`judge`) started now in a thread of its own, in the judges' box once `judges_box` hands
        it (its work beside pytest done: `prepare` among it), while the judges before it run in another box
        (judges/box.py), taking turns with them on the host (judges/turns.py); `judge` then hands its answer.
        Nothing else may use that box until it has. Where that box dies under the calls (its server gone), they
        are asked again once in a `fresh` box on the same tree: the base's answers are the host's already, and
        the summary says so (`again_in_a_fresh_box`)."""
        def judged() -> tuple[list[Evidence], dict[str, Any]]:
            try:
                box, tree, changes = judges_box()
                with turns:
                    return self._judge(turns.box(box), tree, changes)
            except SandboxError as e:
                made = self._tree
                if fresh is None or made is None or not self.asks():
                    raise
                died = f"{type(e).__name__}: {str(e)[:200]}"
            tree, changes = made
            with fresh(tree) as again, turns:
                found, summary = self._judge(turns.box(again), tree, changes)
            return found, {**summary, "again_in_a_fresh_box": died}

        self._turns = turns
        runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="patcher-held-out")
        self._begun = runner.submit(judged)
        runner.shutdown(wait=False)

    def settle(self) -> None:
        """Waits for what `begin` started to end, whatever its answer (its box may have been closed under it)."""
        if self._begun is not None:
            wait([self._begun])

    def prepare(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> None:
        """In the judge's box while pytest verifies elsewhere (the engine is done): the crash's own argument values
        recorded on the base, the calls to ask chosen, inputs drawn, and the base's answers to them."""
        started = time.monotonic()
        self._tree = (tree, changes)
        threading.Thread(target=importlib.import_module, args=("patcher.verify.judges.heldout.strategies",),
                         daemon=True, name="patcher-import-hypothesis").start()  # Hypothesis loads meanwhile
        try:
            self._prepare(box, tree, changes)
        except Exception as e:  # the judge's own fault: it judges nothing, and the verdict says why (never verified)
            self.plain, self.runs, self.unfit = None, [], ""
            self.note = f"the held-out judge failed on its own ({type(e).__name__}: {str(e)[:160]})"
        finally:
            self.alongside_s = time.monotonic() - started

    def _prepare(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> None:
        records = self._record(box, tree, changes)
        base_files = self._base_files(changes)
        whys: list[str] = []
        for test in self.failing:
            rec = records.get(test)
            if rec is None or rec.get("outcome") != "failed":
                continue
            if self.plain is None:
                self._plain(box, rec, test, changes, whys)
            frame, target, why = in_run(rec, changes, self.job.staged.path)
            if frame is None or target is None:
                whys.append(why)
                continue
            seeds = constants(self.job.staged.path, target.file)
            plan = InRun(test, node_id(test, tree.files) or test, frame, target,
                         _drawn(target.tested, seeds, str(rec.get("message"))), seeds)
            plan.base = inrun.ask(box, plan, self.job, {}, base_files, tree)
            self.runs.append(plan)
        if not self.runs and self.plain is None:
            self.note = self.note or "; ".join(dict.fromkeys(whys)) or "no test that failed on the base was " \
                "recorded failing"
            failed = [r for t in self.failing if (r := records.get(t)) and r.get("outcome") == "failed"]
            if failed and all(_unfit(r) for r in failed):
                self.unfit = f"the test's own call does not fit the base's function ({failed[0].get('message')}): " \
                    "the base has no answer to set the diff's beside"

    def _base_files(self, changes: list[Change]) -> dict[str, str]:
        """The files the diff's source part changed, as the base has them (written in for the base's run)."""
        source = [c for c in changes if c.path not in self.added]
        return {c.path: c.old_text for c in source if c.kind == "modified" and c.old_text is not None}

    def _plain(self, box: Sandbox, rec: dict[str, Any], test: str, changes: list[Change], whys: list[str]) -> None:
        """The tested call made by name from plain data, where it can be (the state rules read it)."""
        target, why = choose(rec, changes, self.job.staged.path)
        if target is None:
            whys.append(why)
            return
        seeds = constants(self.job.staged.path, target.file)
        inputs = _drawn(target.tested, seeds, str(rec.get("message")), copy=False)
        plan = [*target.calls, *target.calls, *reversed(target.calls), *inputs]
        loaded = [str(n) for n in rec.get("loaded") or []][:MAX_LOADED]
        self.plain = PlainCalls(self.job, self.added, Drawn(target, test, inputs, seeds, plan, [], loaded=loaded))
        self.plain.on_base(box, changes)

    def _record(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> dict[str, dict[str, Any]]:
        """The recording of each test (as verification names it) that failed on the base."""
        nodes = {t: n for t in self.failing if (n := node_id(t, tree.files))}
        if not nodes:
            self.note = "no test that failed on the base is a test function the judge can address"
            return {}
        base = self.job.base
        tests = sorted({f for f in tree.files if is_test_path(f)} | (base.test_files - base.doctest_files)
                       | set(self.added))
        spec = {"mode": "record", "tests": sorted(set(nodes.values())), "test_files": tests,
                "restore": put_back(self.job, self.added, changes)}
        records, forged, note = ask_box(box, spec, RECORD_S)
        by_node = {str(r.get("id")): r for r in records if r.get("k") == "test" and not forged}
        self.note = forged or note
        return {t: by_node[n] for t, n in nodes.items() if n in by_node}

    def judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> tuple[list[Evidence], dict[str, Any]]:
        """With the diff, after pytest: the same inputs, their paths through the diff's own lines; the evidence,
        and the summary (`verification.judges["held_out"]`). Where `begin` started it, its answer."""
        if self._begun is not None:
            with self._turns.waiting() if self._turns is not None else contextlib.nullcontext():
                return self._begun.result()
        return self._judge(box, tree, changes)

    def _judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> tuple[list[Evidence], dict[str, Any]]:
        started = time.monotonic()
        found: list[Evidence] = []
        lines = diff_lines(changes, self.added)
        summaries = []
        for plan in self.runs:
            plan.patched = inrun.ask(box, plan, self.job, lines, None, tree)
            sides = inrun.sides(plan)
            checked = inrun.checks(plan)
            found += checked
            if sides is None:
                lost = bool(plan.base and plan.base.answers)  # the base answered there, the diff's side did not
                summaries.append({"test": plan.test, "inputs": 0, "note": _note(plan), "lost_with_the_diff": lost,
                                  "counterexamples": [e.quote for e in checked]})
                continue
            expected = expected_values(tree.path, plan.node)
            evidence, summary = judge(sides, self.job.exc_type, expected)
            found += [e for e in evidence if e.kind != "not_in_effect"]  # in the run itself: checks() judges that
            summary["counterexamples"] = [e.quote for e in checked] + summary["counterexamples"]
            summaries.append({"test": plan.test, **summary})
        asked = any(s.get("compared") for s in summaries)
        if self.plain is not None:
            plain: list[Evidence] = []
            made = {"made_by_name": True, **self.plain.judge(box, tree, changes, plain, refusals_only=asked)}
            if asked:  # the run's answers are the judge's record: what the calls by name refuse by draws is put to it
                plain = confirmed(box, self.job, tree, lines, self._base_files(changes), self.runs, self.plain,
                                  plain, made)
            summaries.append(made)
            found += plain
        summary = _summary(summaries, self.note)
        summary.update(duration_s=round(time.monotonic() - started, 3), alongside_s=round(self.alongside_s, 3),
                       **({"begun_s": round(time.monotonic() - started, 3)} if self._begun is not None else {}))
        return found, summary


SIGNATURE = re.compile(r"unexpected keyword argument|positional arguments? but \d+ (?:were|was) given|missing \d+ "
                       r"required (?:positional|keyword-only) argument|takes no (?:keyword )?arguments")
"""What a TypeError says when a call does not fit the function's signature."""


def _unfit(record: dict[str, Any]) -> bool:
    """Whether a failed test's recording is a TypeError of a call that does not fit a signature, raised where the
    test made it (no frame of the repository's on the way)."""
    return record.get("exc") == "TypeError" and not record.get("frames") and \
        bool(SIGNATURE.search(str(record.get("message") or "")))


def _drawn(tested: Call, seeds: list[Any], message: str, copy: bool = True) -> list[Call]:
    """The inputs for a tested call: (`copy`: asked inside the test's run) the call rebuilt (equal, not identical),
    then the drawn ones; where nothing else can be drawn (every argument a live object the host cannot vary), the
    call with each live argument made again as an equal copy through its class (dimensions.made_again)."""
    from patcher.verify.judges.heldout.strategies import draw_calls  # Hypothesis

    inputs = [*([tested] if copy else []), *draw_calls(tested, INPUTS, seeds)]
    inputs += [c for c in [*recased(tested), *padded(tested), *retyped(tested), *magnified(tested),
                             *keyed(tested, seeds)] if c not in inputs]
    if copy and len(inputs) == 1 and (again := made_again(tested)) is not None:  # nothing to vary but identity
        inputs.append(again)
    if COMPARED in message:  # a failed comparison: the tested items in every order too
        inputs += [c for c in rearrangements(tested) if c not in inputs]
    return inputs


def _note(plan: InRun) -> str:
    sides = [s for s in (plan.base, plan.patched) if s is not None]
    return next((s.note for s in sides if s.note), "") or "no input was answered on both sides"


def _summary(parts: list[dict[str, Any]], note: str) -> dict[str, Any]:
    """One summary: the first tested call's, with the inputs compared on both sides over every one."""
    if not parts:
        return {"inputs": 0, "note": note or "no recording"}
    first = next((p for p in parts if p.get("compared")), parts[0])
    out = {k: v for k, v in first.items() if k not in ("test", "made_by_name")}
    out["compared"] = sum(int(p.get("compared") or 0) for p in parts)
    out["counterexamples"] = list(dict.fromkeys(q for p in parts for q in p.get("counterexamples") or []))[:5]
    out["tested_calls"] = [p.get("test") or "by name" for p in parts]
    out["in_run"] = sum(1 for p in parts if not p.get("made_by_name") and p.get("compared"))
    named = next((p for p in parts if p.get("made_by_name")), None)
    if named is not None and named is not first:  # the calls by name beside the run's: what they reached
        out["by_name"] = {k: named[k] for k in ("inputs", "compared", "as_an_application", "note") if k in named}
    if any(p.get("unsteady") for p in parts):
        out["unsteady"] = True
    lost = [p for p in parts if p.get("lost_with_the_diff")]
    if lost:  # calls by name stand in where the diff's run did not meet the test's own call only if they are enough
        out["lost_with_the_diff"] = len(lost)
        out["note"] = f"with the diff, {lost[0]['note']}"
    notes = [str(p["note"]) for p in parts if p.get("note")]
    if notes and not out.get("note"):
        out["note"] = notes[0]
    return out

