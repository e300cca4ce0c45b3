"""How the diff looks: the rules by construct, the spelling rules and the literal and module-state hints
(looks.py says why they never refuse), one hint per flagged line, marked where a behavioural judge's evidence
meets it. The judge runs on the diff's text whatever the verdict, after the others."""

from __future__ import annotations

from patcher.verify.judges.constructs.looks import as_evidence, construct_hints
from patcher.verify.judges.seam import Judged, Judging


def constructs(ctx: Judging) -> Judged:
    job = ctx.job
    hints = construct_hints(ctx.changes, job.staged.path, job.staged.files, job.repro)
    return Judged(judged=True, evidence=as_evidence(hints, ctx.found.evidence), summary={"lines": len(hints)})
