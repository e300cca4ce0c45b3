"""Held-out calls made by name from plain data, outside the test (box side: sandbox/judge/heldout/calls.py).

Where the tested call can be made again by its module and name with plain-data arguments, both sides are called
in a process of their own on a fresh copy of the tree: the test's own calls of the function (in order, again,
reversed) and the drawn inputs, one process for all; then each input alone, in a process forked for it after the
import and with no trace hook. What depends on the calls before it, or on being watched, shows there (the state
rules: heldout/state.py), and so does a module constant the test hands the function, changed by the diff
(heldout/inputs.py). Where the tested call still crashes in a plain process as on the base (`not_in_effect`),
both sides are called once more, each process loading first the modules the test's process had loaded at the
crash. The inputs asked inside the test's own run (heldout/inrun.py) are the judge's first evidence; these calls
judge alone where that cannot be asked, and beside them only by what they refuse. The diff's side is called once
more in a process like an application's (no flags, no trace hook, no timer, no test-run variables): an input it
answers in the judges' process that still crashes there as on the base is `judges_only`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.job import Job
from patcher.verify.judges.asked import node_id, restore
from patcher.verify.judges.heldout.answers import Answer, Sides, shown
from patcher.verify.judges.heldout.inputs import changed_input, imported_names
from patcher.verify.judges.heldout.rules import ANSWERED, judge
from patcher.verify.judges.heldout.target import Call, Target, expected_values
from patcher.verify.policy.rules import is_test_path
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Evidence
from sandbox.protocol import HeldOutRequest

PER_CALL_S = 2.0
CALLS_S = 8.0
"""Time for all the calls of one side; calls past it are skipped (not judged)."""
RECORD_S = 60.0
ORDERED = ("call_order", "state")
"""The rules that hold an answer against the order it was asked in: not where the answers change by themselves."""


@dataclass
class Drawn:
    """A tested call made by name: its target, inputs and plan, and the base's answers."""

    target: Target
    test: str
    """The failing test (as verification names it) whose crash gave the target and its tested call."""
    inputs: list[Call]
    seeds: list[Any]
    plan: list[Call]
    """Every call made, in order: the test's own calls of the target (in order, again, reversed), then the inputs."""
    base: list[Answer]
    note: str = ""
    again: list[Answer] = field(default_factory=list)
    """The base's answers to the inputs, each called alone in a process forked for it after the import."""
    loaded: list[str] = field(default_factory=list)
    """The modules from outside the repository that the test's process had loaded at the crash. Where the tested
    call still crashes with the diff in a plain process, both sides are called again with these loaded first:
    code that tells a test run by what is loaded then sees one, and answers the inputs as it answered the test."""


class PlainCalls:
    """One failing test's tested call, made by name on both sides."""

    def __init__(self, job: Job, added: list[str], drawn: Drawn) -> None:
        self.job, self.added, self.drawn = job, added, drawn
        self.patched: list[Answer] = []
        """The diff's answers to the plan (in one process, watched), once judged."""

    def stuck(self) -> list[Call]:
        """The drawn inputs that, with the diff, still crash as on the base."""
        drawn, start = self.drawn, len(self.drawn.plan) - len(self.drawn.inputs)
        return [c for c, b, p in zip(drawn.inputs, drawn.base[start:], self.patched[start:], strict=False)
                if p.same_crash(b)]

    def on_base(self, box: Sandbox, changes: list[Change]) -> None:
        drawn = self.drawn
        drawn.base, drawn.again, drawn.note = self._calls(box, drawn, self._put_back(changes), {}, [])

    def judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change], found: list[Evidence],
              refusals_only: bool = False) -> dict[str, Any]:
        """With the diff: the evidence (into `found`) and the summary. With `refusals_only` (the inputs asked inside
        the test's run judged), only what refuses: the hints and the judge's reach are the in-run's to say."""
        summary = self._judge(box, tree, changes, found)
        if refusals_only:
            found[:] = [e for e in found if e.refuses]
        return summary

    def _judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change], found: list[Evidence]) -> dict[str, Any]:
        drawn = self.drawn
        expected = expected_values(tree.path, node_id(drawn.test, tree.files) or "")
        patched, again, note = self._calls(box, drawn, {}, self._lines(changes), [], found)
        self.patched = patched
        if not drawn.base or not patched:
            return {"target": drawn.target.name, "inputs": len(drawn.inputs), "note": drawn.note or note}
        sides = Sides(drawn.target, drawn.inputs, drawn.base, patched, drawn.seeds, drawn.again, again)
        evidence, summary = judge(sides, self.job.exc_type, expected)
        evidence += self._as_an_application(box, drawn, patched, summary)
        if any(e.kind in ORDERED for e in evidence) and self._unsteady(box, drawn, again):
            evidence = [e for e in evidence if e.kind not in ORDERED]  # its answers change by themselves
            summary["unsteady"] = True  # an input called alone twice answered two ways: none is held against order
        if drawn.loaded and any(e.kind == "not_in_effect" for e in evidence):
            # The tested call still crashes in a plain process: both sides once more, each calling process loading
            # first what the test's process had loaded at the crash; those answers are the ones judged.
            base, base_again, note_base = self._calls(box, drawn, self._put_back(changes), {}, drawn.loaded)
            patched, again, note = self._calls(box, drawn, {}, self._lines(changes), drawn.loaded, found)
            if base and patched:
                sides = Sides(drawn.target, drawn.inputs, base, patched, drawn.seeds, base_again, again)
                refused = [e for e in evidence if e.refuses]  # what refused in the plain process still does
                evidence, summary = judge(sides, self.job.exc_type, expected)
                seen = {(e.kind, e.quote) for e in evidence}
                evidence += [e for e in refused if (e.kind, e.quote) not in seen]
                summary["loaded_first"] = len(drawn.loaded)
            note = note or note_base
        if any(e.kind == "not_in_effect" for e in evidence):
            moved = self._test_input(box, tree, changes, drawn, summary["tested"])
            if moved:
                evidence.append(moved)
                summary["counterexamples"].append(moved.quote)
        found += evidence
        note = drawn.note or note
        return {**summary, "note": note} if note else summary

    def _test_input(self, box: Sandbox, tree: StagedRepo, changes: list[Change], drawn: Drawn, tested: str
                    ) -> Evidence | None:
        """Whether the diff changed a value the failing test imports and hands the function
        (verify/judges/heldout/inputs.py): the
        names read in the box on the base and with the diff."""
        node = node_id(drawn.test, tree.files) or ""
        source = tree.path / node.split("::")[0]
        names = imported_names(source.read_text(encoding="utf-8", errors="replace"), tree.files) if (
            node and source.is_file()) else []
        if not names:
            return None
        sides = []
        for put_back in (self._put_back(changes), {}):
            spec = {"mode": "values", "names": names, "restore": put_back}
            records, forged, _ = ask_box(box, spec, RECORD_S)
            sides.append({} if forged else {_read(r): r["v"] for r in records if r.get("k") == "value" and "v" in r})
        return changed_input(sides[0], sides[1], drawn.target.tested, tested)

    def _calls(self, box: Sandbox, drawn: Drawn, restore: dict[str, str | None], lines: dict[str, list[int]],
               loaded: list[str], found: list[Evidence] | None = None) -> tuple[list[Answer], list[Answer], str]:
        """One side's answers: the plan in one process (watched through `lines`), then each input alone; and
        what kept some from being answered. A record that is not the judge's own is `report_tampered` in
        `found` (the diff's side) or the note (the base's)."""
        answers, note, forged = self._side(box, drawn.target, drawn.plan, restore, lines, loaded)
        again, _, forged_again = self._side(box, drawn.target, drawn.inputs, restore, {}, loaded, alone=True)
        forged = forged or forged_again
        if forged and found is not None:
            found.append(Evidence("held_out", "forged", "the record of the held-out calls with the diff is "
                                           "not the judge's own", refuses=True, reason="report_tampered", quote=forged))
        return answers, again, note or forged

    def _side(self, box: Sandbox, target: Target, plan: list[Call], restore: dict[str, str | None],
              lines: dict[str, list[int]], loaded: list[str], alone: bool = False, app: bool = False
              ) -> tuple[list[Answer], str, str]:
        """Each call's answer on one side (none when the function could not be called), what kept some from
        being answered, and why the record cannot be believed (else "")."""
        spec = {"mode": "call", "target": target.spec, "calls": plan, "site": self.job.site, "lines": lines,
                "per_call_s": PER_CALL_S, "total_s": CALLS_S, "restore": restore, "alone": alone, "preload": loaded,
                **({"app": True} if app else {})}
        records, forged, note = ask_box(box, spec, CALLS_S + 3 * PER_CALL_S + 20)
        head = next((r for r in records if r.get("k") == "target"), None)
        if forged or head is None or not head.get("ok"):
            return [], note or f"{target.name} cannot be called: {(head or {}).get('why') or 'no answer'}", forged
        by_index = {int(r["i"]): r for r in records if r.get("k") == "call" and isinstance(r.get("i"), int)}
        return [Answer.of(by_index.get(i)) for i in range(len(plan))], note, ""

    def _as_an_application(self, box: Sandbox, drawn: Drawn, patched: list[Answer], summary: dict[str, Any]
                           ) -> list[Evidence]:
        """The diff's side once more in a process like an application's (no flags, no trace hook, no timer, no
        test-run variables, the calling module a script's `__main__`): an input the diff answers in the judges'
        process that crashes there exactly as on the base is a fix for the judges only. Asked there: the test's own
        calls first, as in the plan, then only the inputs the rule reads (the base raised, the diff returned), so
        that an input that hangs with the diff (no timer ends it there) never holds up the ones after it."""
        own = len(drawn.plan) - len(drawn.inputs)  # the test's own calls: in order, again, and reversed
        asked = [i for i, (b, p) in enumerate(zip(drawn.base, patched, strict=False))
                 if i < own or (b.kind == "raised" and p.kind == "returned")]
        got, _, forged = self._side(box, drawn.target, [drawn.plan[i] for i in asked], {}, {}, [], app=True)
        by_plan = dict(zip(asked, got, strict=False))
        app = [by_plan.get(i, Answer("missing")) for i in range(len(drawn.plan))]
        summary["as_an_application"] = sum(1 for a in got if a.kind in ANSWERED)
        if forged:
            return [Evidence("held_out", "forged", "the record of the held-out calls with the diff in an "
                             "application's process is not the judge's own", refuses=True, reason="report_tampered",
                             quote=forged)]
        told = [i for i, (b, p, a) in enumerate(zip(drawn.base, patched, app, strict=False))
                if p.kind == "returned" and a.same_crash(b)]
        if not told:
            return []
        i = told[0]
        quote = f"{shown(drawn.target, drawn.plan[i])} {patched[i].said()} in the judges' process, {app[i].said()} " \
            "in an application's"
        summary["counterexamples"] = [*summary.get("counterexamples", []), quote]
        return [Evidence("held_out", "judges_only", f"with the diff, {len(told)} input(s) it answers in the judges' "
                         "process still crash as on the base in a process like an application's (no flags, no trace "
                         "hook, no timer)", refuses=True, reason="behaves_differently", quote=quote)]

    def _unsteady(self, box: Sandbox, drawn: Drawn, again: list[Answer]) -> bool:
        """Whether the diff's answers change by themselves (random, time): each input called alone once more, in a
        process forked for it, answers otherwise than the first time."""
        twice, _, _ = self._side(box, drawn.target, drawn.inputs, {}, {}, [], alone=True)
        return any(a.kind in ANSWERED and b.kind in ANSWERED and not a.alike(b)
                   for a, b in zip(again, twice, strict=False))

    def _put_back(self, changes: list[Change]) -> dict[str, str | None]:
        return put_back(self.job, self.added, changes)

    def _lines(self, changes: list[Change]) -> dict[str, list[int]]:
        return diff_lines(changes, self.added)


def _read(record: dict[str, Any]) -> tuple[Any, ...]:
    """The Read (heldout/inputs.py) a value record answers."""
    steps = tuple((str(k), v) for k, v in record.get("steps") or [])
    return (str(record.get("module")), str(record.get("name")), *((steps,) if steps else ()))


def put_back(job: Job, added: list[str], changes: list[Change]) -> dict[str, str | None]:
    """The files the diff's source part changed, as the base has them (a box copy of the tree is the base's so)."""
    return restore(job.staged, [c for c in changes if c.path not in added])


def diff_lines(changes: list[Change], added: list[str]) -> dict[str, list[int]]:
    """The lines the diff's source part added or changed, by file (in the patched tree)."""
    return {c.path: [n for n, _ in c.added_lines] for c in changes
            if c.path.endswith(".py") and c.added_lines and c.path not in added and not is_test_path(c.path)}


def ask_box(box: Sandbox, spec: dict[str, Any], deadline_s: float) -> tuple[list[dict[str, Any]], str, str]:
    """The run's signed records; why they cannot be believed (a line not signed by the judge); and why some may
    be missing (the run timed out or ended early). Empty strings when all is well."""
    result = box.call(HeldOutRequest(job=json.dumps(spec)), deadline_s)
    got = result.data.get("evidence")
    if not isinstance(got, dict):
        said = (result.output.strip().splitlines() or ["no answer"])[0][:200]
        return [], "", "timed out" if result.timed_out else said
    records = [r for r in got.get("records") or [] if isinstance(r, dict)]
    if got.get("problem"):
        return [], str(got["problem"]), ""
    escaped = next((r for r in records if r.get("k") == "escaped"), None)
    if escaped is not None:  # the side ran the box's own copy, not its tree: nothing it answered is its side's
        names = ", ".join(str(m) for m in (escaped.get("modules") or [])[:3])
        return [], "", f"the run imported the box's own copy of {names}, not its side's tree"
    if not any(r.get("k") == "end" for r in records):
        return records, "", "the run ended before its end record" + (" (timed out)" if result.timed_out else "")
    return records, "", ""
