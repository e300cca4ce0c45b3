"""The perturbed reproductions: variants of the fail-to-pass tests' literal inputs (judges/variants.py) that crash
the base as the test does must not still crash the same way with the diff where the diff adds the literal it
changed (`overfitted`, the variant quoted); other still-crashing variants are a hint.

The variants of tests the second judge judged twice ran in the judges' run, bare (judges/asked.py). For the
tests it could not run, they run under pytest in the judges' box (its tree is the one pytest judged): each
variant goes in as a test file of its own beside the original (`test_x_pv3.py`, so its conftest fixtures still
apply); the source files the diff changed are put back as on the base and pytest runs the variants; the diff's
files go back and pytest runs the variants that crashed the base the same way. Only with host-written files in
a box nobody else uses. The judge applies where a test has a literal input to vary; it is not required.
"""

from __future__ import annotations

import shlex

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.judges.asked import CONTEXTS, Crash, asked_of, crash_of, crashes
from patcher.verify.judges.seam import Judged, Judging
from patcher.verify.judges.variants import Variant, added_literals, special_cased, variants
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Evidence, Refused, SecondJudge
from patcher.verify.stream import crashed
from patcher.verify.testruns import TestRun, run_tests
from sandbox.protocol import WriteFileRequest


def perturbed(ctx: Judging) -> Judged:
    asked = asked_of(ctx)
    assert ctx.box is not None and ctx.tree is not None
    base, after = asked.bases[CONTEXTS[0]], asked.afters[CONTEXTS[0]]
    counted = {asked.cases[k][1] for k in asked.judged_in}
    held = [k for k in asked.cases if k.startswith("v") and asked.crash is not None
            and crashes(base.by_id.get(k), *asked.crash) and asked.cases[k][1] in counted]
    still = [v for k in held if (v := asked.cases[k][2]) and asked.crash and crashes(after.by_id.get(k), *asked.crash)]
    tried = [v for k, (_, _, v) in asked.cases.items() if k.startswith("v") and v]
    once = [asked.cases[k][1] for k in asked.tests() if k not in asked.judged_in]
    more, base_too, still_too = under_pytest(ctx.box, ctx.job.staged, ctx.tree, ctx.source, once, crash_of(ctx.job, []))
    tried, still = tried + more, still + still_too
    added = added_literals(ctx.source, ctx.job.staged.path)
    cased = [v.quote for v in still if special_cased(v, added)]
    unheld = [v.quote for v in still if v.quote not in cased]
    summary = {"tried": len(tried), "crash_the_base": len(held) + len(base_too), "under_pytest": len(more),
               "still_crash": cased, "still_crash_unheld": unheld}
    (ctx.found.judge or SecondJudge()).variants = summary
    exc = ctx.job.exc_type or "the same exception"
    evidence = [Evidence("perturbed", "still_crashes", "the fix handles only the tested input: with the variant, the "
                         f"reproduction still raises {exc} through the crash site"
                         + (f" ({len(cased)} variant(s) in all)" if len(cased) > 1 else ""), True, "overfitted",
                         cased[0])] if cased else []
    if unheld:
        evidence.append(Evidence("perturbed", "still_crashes_unheld", f"{len(unheld)} variant(s) of the reproduction "
                                 "still crash with the diff (it adds none of their literals, so they are not held "
                                 "against it), e.g.", quote=unheld[0]))
    return Judged(applies=bool(tried), judged=bool(tried), why="" if tried else "no literal input of a fail-to-pass "
                  "test to vary", evidence=evidence)


def under_pytest(box: Sandbox, staged: StagedRepo, tree: StagedRepo, changes: list[Change], nodes: list[str],
                 crash: Crash | None) -> tuple[list[Variant], list[Variant], list[Variant]]:
    """(tried, crash the base, still crash with the diff)."""
    tried = variants(tree.path, nodes)
    if not tried or crash is None or any(c.kind == "added" or c.new_text is None for c in changes):
        return tried, [], []
    try:
        base_text = {c.path: (staged.path / c.path).read_text(encoding="utf-8") for c in changes}
        diff_text = {c.path: (tree.path / c.path).read_text(encoding="utf-8") for c in changes}
    except (OSError, UnicodeDecodeError):
        return tried, [], []
    by_node = {}
    for n, v in enumerate(tried):
        rel, rest = v.test.split("::", 1)
        path = f"{rel[:-3]}_pv{n}.py"
        box.call(WriteFileRequest(path=path, content=v.source))
        by_node[f"{path}::{rest}"] = v
    _write(box, base_text)
    base = _run(box, list(by_node), "variants-base")
    held = [n for n in by_node if base.stream is not None and crashed(base.stream, {n}, *crash)]
    _write(box, diff_text)
    after = _run(box, held, "variants-diff") if held else None
    still = [n for n in held if after is not None and after.stream is not None and crashed(after.stream, {n}, *crash)]
    return tried, [by_node[n] for n in held], [by_node[n] for n in still]


def _write(box: Sandbox, files: dict[str, str]) -> None:
    for path, text in files.items():
        box.call(WriteFileRequest(path=path, content=text))


def _run(box: Sandbox, nodes: list[str], name: str) -> TestRun:
    run = run_tests(box, "python -m pytest -q " + shlex.join(nodes), name)
    if run.tampered:
        raise Refused("report_tampered", f"pytest's run of the perturbed reproductions: {run.tampered}")
    return run
