"""The held-out judge: inputs no engine saw, drawn from the crash's own arguments, answered by the base and the diff
(judge.py runs it, rules.py judges the answers). It applies wherever the diff changes source code, but where every
failing test's own call does not fit the base's function (a TypeError of its signature, raised where the test
made the call: the fix adds the keyword or argument, and the base has no answer to compare); it judged when
at least MIN_COMPARED inputs (or every one drawn, for a call whose arguments admit fewer; the test's own, for a call
that takes no arguments, whose one input is the test's) were answered on both sides
with the tested call in effect outside the test (called directly with the test's own arguments, the fix takes effect:
else what the test proves cannot be compared), and, where the inputs were asked inside the test's run on the base and
the diff's side gave no answer there (the diff kept the judge from the test's own call, or an honest fix changed what
reaches the function), only when at least MIN_COMPARED inputs were answered on both sides elsewhere (by name, or in
another failing test's run)."""

from __future__ import annotations

from patcher.verify.judges.seam import Judged, Judging

MIN_COMPARED = 10
"""Inputs answered on both sides for the held-out judge to count as having judged."""


def held_out(ctx: Judging) -> Judged:
    if ctx.held is None or ctx.box is None or ctx.tree is None:
        return Judged(applies=False, why="the diff changes no source file")
    evidence, summary = ctx.held.judge(ctx.box, ctx.tree, ctx.changes)  # begun in its own box: waits for it
    if ctx.held.unfit:  # the base cannot be asked the test's own call: the fix adds what the call needs
        return Judged(applies=False, why=ctx.held.unfit)
    compared = int(summary.get("compared") or 0)
    in_effect = not any(e.kind == "not_in_effect" for e in evidence)
    if summary.get("lost_with_the_diff") and compared < MIN_COMPARED:  # the base answered inside its run, the
        # diff's side did not (a fix may change what reaches the function), and too few calls stand in for it
        return Judged(judged=False, why=str(summary.get("note")), evidence=evidence, summary=summary)
    drawn = int(summary.get("inputs") or 0)
    bare = summary.get("arguments") == 0 and compared >= 1  # `f()`: no input but the test's own exists
    judged = in_effect and (compared >= MIN_COMPARED or (compared >= 2 and compared >= drawn) or bare)
    why = "" if judged else str(summary.get("note") or "") if not compared else (
        "called directly with the test's own arguments, the tested call still crashes as on the base" if not
        in_effect else f"only {compared} input(s) were answered on both sides (at least {MIN_COMPARED} are needed)")
    return Judged(judged=judged, why=why or "no input was answered on both sides", evidence=evidence, summary=summary)
