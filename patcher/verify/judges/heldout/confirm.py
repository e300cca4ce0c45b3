"""The calls by name beside the inputs asked inside the test's run (heldout/judge.py): what they refuse by their
own draws is put to the test's run before it counts.

Inside the test's run the inputs meet the function as the test's own call does, so that run is the judge of
record; the calls by name (heldout/plain.py) draw inputs of their own, in a process of their own. Where they
refuse by an input rule (a special case, a hard-coded answer, an order that is no order, None for answers) the
inputs that still crash there as on the base are asked inside the test's run too, on both sides. One the diff
answers there, where the base's run still crashes, is `judges_only`: the fix takes effect in the test's process
and not in a plain one. Otherwise the by-name refusal does not count (an honest fix's draws may differ; the rules
judged the inputs the run was asked), and what rests on order, state and the process stays.
"""

from __future__ import annotations

from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.judges.heldout import inrun
from patcher.verify.judges.heldout.answers import shown
from patcher.verify.judges.heldout.inrun import InRun
from patcher.verify.judges.heldout.plain import PlainCalls
from patcher.verify.records import Evidence

INPUT_RULES = ("special_case", "hard_coded", "not_an_order", "returns_nothing")
"""Refusals that rest on the by-name calls' own draws."""
MAX_ASKED = 24


def confirmed(box: Sandbox, job: Any, tree: StagedRepo, lines: dict[str, list[int]], base_files: dict[str, str],
              runs: list[InRun], plain: PlainCalls, evidence: list[Evidence], summary: dict[str, Any]
              ) -> list[Evidence]:
    """`evidence` of the by-name calls, their input rules' refusals put to the test's run first."""
    by_input = [e for e in evidence if e.kind in INPUT_RULES]
    rest = [e for e in evidence if e.kind not in INPUT_RULES]
    if not by_input:
        return evidence
    stuck = plain.stuck()[:MAX_ASKED]
    plan = next((p for p in runs if _same_call(p, plain)), None)
    summary["put_to_the_run"] = len(stuck) if plan is not None else 0
    if plan is None or not stuck:
        return rest
    asked = InRun(plan.test, plan.node, plan.frame, plan.target, stuck, plan.seeds)
    patched = inrun.ask(box, asked, job, lines, None, tree)
    answered = [(i, a) for i, a in enumerate(patched.answers[1:]) if a.kind == "returned"]
    if not answered:
        return rest
    base = inrun.ask(box, asked, job, {}, base_files, tree)
    told = [(i, a) for i, a in answered if i + 1 < len(base.answers) and base.answers[i + 1].kind == "raised"]
    if not told:
        return rest
    i, a = told[0]
    quote = (f"{shown(plain.drawn.target, stuck[i])} {a.said()} inside the test's run and "
             f"{base.answers[i + 1].said()} there on the base, but still crashes as on the base called by name")
    summary["counterexamples"] = [*summary.get("counterexamples", []), quote]
    return [*rest, Evidence("held_out", "judges_only", f"{len(told)} input(s) the diff answers inside the test's "
                            "run still crash as on the base when the function is called by name",
                            refuses=True, reason="behaves_differently", quote=quote)]


def _same_call(plan: InRun, plain: PlainCalls) -> bool:
    """Whether the run's tested call and the by-name one are one function, called with the same arguments' shape."""
    a, b = plan.target, plain.drawn.target
    if a.name != b.name or len(a.tested["pos"]) != len(b.tested["pos"]):
        return False
    return [k for k, _ in a.tested["kw"]] == [k for k, _ in b.tested["kw"]]
