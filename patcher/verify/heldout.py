"""The held-out judge: inputs generated after the engine is done, from the crash's own argument values, on which
the patched code is judged against the base (the rules: heldrules.py).

In the second judge's box (judgebox.py), three runs of sandbox/judge/patcher_heldout.py, each in a fresh copy
of the tree:
1. `record`, on the base (the files the diff's source part changed put back), started as soon as the box is
   open, while pytest verifies elsewhere: the fail-to-pass tests under pytest with a trace hook that notes the
   crash's own argument values (heldtarget.py picks the function to call from them);
2. after every pytest run and the second judge have passed the diff: inputs drawn by Hypothesis from those
   values (strategies.py), then `call` on the base: the test's own calls of the function (in order, again,
   reversed) and the inputs, one process for all;
3. `call` with the diff, the same calls, with the path each takes through the diff's own lines.
No engine sees the inputs: they are drawn here, after the engine has finished, anew each verification.
"""

from __future__ import annotations

import json
import time
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.heldrules import Answer, Sides, judge
from patcher.verify.heldtarget import Call, Target, choose, constants, expected_values
from patcher.verify.job import Job
from patcher.verify.policy import is_test_path
from patcher.verify.records import Evidence, Findings
from patcher.verify.treediff import Change
from patcher.verify.twice import _node_id, _restore
from sandbox.protocol import HeldOutRequest

RECORDED_TESTS = 3
INPUTS = 48
PER_CALL_S = 2.0
CALLS_S = 8.0
"""Time for all the calls of one side; calls past it are skipped (not judged)."""
RECORD_S = 60.0


class HeldOut:
    def __init__(self, job: Job, failing: set[str], added: list[str]) -> None:
        self.job, self.added = job, added
        self.failing = sorted(failing)[:RECORDED_TESTS]
        self.records: dict[str, dict[str, Any]] = {}
        """The recording of each test (as verification names it) that failed on the base."""
        self.note = ""
        self.record_s = 0.0

    def record(self, box: Sandbox, tree: StagedRepo, changes: list[Change]) -> None:
        """On the base, in the judge's box while pytest verifies elsewhere: the crash's own argument values."""
        started = time.monotonic()
        nodes = {t: n for t in self.failing if (n := _node_id(t, tree.files))}
        if not nodes:
            self.note = "no test that failed on the base is a test function the judge can address"
            return
        tests = sorted(set(self.job.base.test_files) | set(self.added))
        spec = {"mode": "record", "tests": sorted(set(nodes.values())), "test_files": tests,
                "restore": self._put_back(changes)}
        records, forged, note = _ask(box, spec, RECORD_S)
        by_node = {str(r.get("id")): r for r in records if r.get("k") == "test" and not forged}
        self.records = {t: by_node[n] for t, n in nodes.items() if n in by_node}
        self.note = forged or note or ("" if self.records else "the recording of the failing tests gave no record")
        self.record_s = time.monotonic() - started

    def judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change], found: Findings) -> None:
        """The evidence and the summary (`found.judges["held_out"]`), after the engine and pytest are done."""
        started = time.monotonic()
        summary = self._judge(box, tree, changes, found)
        summary.update(duration_s=round(time.monotonic() - started, 3), record_s=round(self.record_s, 3))
        found.judges["held_out"] = summary

    def _judge(self, box: Sandbox, tree: StagedRepo, changes: list[Change], found: Findings) -> dict[str, Any]:
        if not self.records:
            return {"inputs": 0, "note": self.note or "no recording"}
        target, test, why = None, "", ""
        for test in found.fail_to_pass:
            rec = self.records.get(test)
            if rec is not None and rec.get("outcome") == "failed":
                target, why = choose(rec, changes, self.job.staged.path)
                if target is not None:
                    break
        if target is None:
            return {"inputs": 0, "note": why or "no test that failed on the base was recorded failing"}
        from patcher.verify.strategies import draw_calls  # here: Hypothesis is imported only when inputs are drawn

        seeds = constants(self.job.staged.path, target.file)
        inputs = draw_calls(target.tested, INPUTS, seeds)
        plan = [*target.calls, *target.calls, *reversed(target.calls), *inputs]
        base, note, _ = self._side(box, target, plan, self._put_back(changes), {})
        patched, also, forged = self._side(box, target, plan, {}, self._lines(changes))
        if forged:
            found.evidence.append(Evidence("held_out", "forged", "the record of the held-out calls with the diff is "
                                           "not the judge's own", refuses=True, reason="report_tampered", quote=forged))
        if not base or not patched:
            return {"target": target.name, "inputs": len(inputs), "note": note or also or forged}
        evidence, summary = judge(Sides(target, inputs, base, patched, seeds), self.job.exc_type,
                                  expected_values(tree.path, _node_id(test, tree.files) or test))
        found.evidence += evidence
        return {**summary, "note": note or also} if note or also else summary

    def _side(self, box: Sandbox, target: Target, plan: list[Call], restore: dict[str, str | None],
              lines: dict[str, list[int]]) -> tuple[list[Answer], str, str]:
        """Each call's answer on one side (none when the function could not be called), what kept some from
        being answered, and why the record cannot be believed (else "")."""
        spec = {"mode": "call", "target": target.spec, "calls": plan, "site": self.job.site, "lines": lines,
                "per_call_s": PER_CALL_S, "total_s": CALLS_S, "restore": restore}
        records, forged, note = _ask(box, spec, CALLS_S + 3 * PER_CALL_S + 20)
        head = next((r for r in records if r.get("k") == "target"), None)
        if forged or head is None or not head.get("ok"):
            return [], note or f"{target.name} cannot be called: {(head or {}).get('why') or 'no answer'}", forged
        by_index = {int(r["i"]): r for r in records if r.get("k") == "call" and isinstance(r.get("i"), int)}
        return [Answer.of(by_index.get(i)) for i in range(len(plan))], note, ""

    def _put_back(self, changes: list[Change]) -> dict[str, str | None]:
        return _restore(self.job.staged, [c for c in changes if c.path not in self.added])

    def _lines(self, changes: list[Change]) -> dict[str, list[int]]:
        """The lines the diff's source part added or changed, by file (in the patched tree)."""
        return {c.path: [n for n, _ in c.added_lines] for c in changes
                if c.path.endswith(".py") and c.added_lines and c.path not in self.added and not is_test_path(c.path)}


def _ask(box: Sandbox, spec: dict[str, Any], deadline_s: float) -> tuple[list[dict[str, Any]], str, str]:
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
    if not any(r.get("k") == "end" for r in records):
        return records, "", "the run ended before its end record" + (" (timed out)" if result.timed_out else "")
    return records, "", ""
