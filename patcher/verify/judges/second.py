"""The second judge and the perturbed reproductions, after pytest has passed the fix.

One fresh box holds the tree the fail-to-pass tests were judged on. The image's own runner
(sandbox/judge/, no test framework; sandbox/judging.py gives it a random copy of the tree, an empty working
directory and a bare environment) runs twice there:
- on the base (the files the diff's source part changed put back): each fail-to-pass test, and the
  variants verify/judges/perturbed/variants.py derives from it. A test counts as judged twice only if this run sees it
  fail; a variant counts only if it crashes the base the same way (exception type, through the crash site).
- with the diff: each counted test must pass (else `behaves_differently`, both outcomes shown), and no
  counted variant may still crash the same way (else `overfitted`, the variant quoted). A variant that
  fails an assertion is not held against the fix.
A test the judge cannot run is judged once: listed, never counted as agreeing. Outcomes come back on the
judge's signed channel; a test with no record failed.
Each fail-to-pass test also runs dressed as pytest, where the diff's own lines and the values handed to the
test's comparisons are watched: the context judge (verify/judges/context.py) compares the outcomes over pytest and both
runs, the runtime and values judges (verify/judges/observed.py) read what was watched.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.job import Job
from patcher.verify.judges.context import compare, gist, outcome
from patcher.verify.judges.observed import Seen, observe_spec, required, runtime_evidence
from patcher.verify.judges.perturbed.under_pytest import under_pytest
from patcher.verify.judges.perturbed.variants import Variant, added_literals, special_cased, variants
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Refused, SecondJudge
from patcher.verify.stream import Failure, Stream, crashed
from patcher.verify.testruns import TestRun
from sandbox.protocol import JudgeRequest

Case = tuple[str, str, Variant | None]
"""(the test as pytest named it, its node id, the variant or None for the test itself), by case id."""
CONTEXTS = ("bare", "dressed")
"""The judge's contexts (sandbox/judging.py): the variants run in the first only."""
TREES = ("base", "patched")
CONTROLS = 2
"""Passing tests per module of the fail-to-pass ones run on the base in every context (controls)."""


@dataclass
class Answers:
    """One judge run's records by case id: {"outcome", "exc", "frames", "why"}; `problem` when forged; what the
    observers saw (`obs`) and the groups or child processes that ended without the judge's end (`ended`)."""

    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None
    note: str = ""
    obs: list[dict[str, Any]] = field(default_factory=list)
    ended: list[dict[str, Any]] = field(default_factory=list)


def judge_twice(job: Job, box: Sandbox, tree: StagedRepo, changes: list[Change], tests: list[str],
                before: TestRun) -> tuple[SecondJudge, Seen]:
    """The second judge's verdict on `tests` (fail-to-pass node ids) in `box`, over `tree` (the judged tree);
    `before` is pytest's run of them on the base. With it, what the contexts and the observers saw."""
    started = time.monotonic()
    out = SecondJudge()
    nodes = {t: _node_id(t, tree.files) for t in tests}
    runnable = [t for t, n in nodes.items() if n]
    out.judged_once += [{"test": t, "why": "not a test function the second judge can address"}
                        for t, n in nodes.items() if not n]
    tried = variants(tree.path, [str(nodes[t]) for t in runnable]) if runnable else []
    cases: dict[str, Case] = {f"t{i}": (t, str(nodes[t]), None) for i, t in enumerate(runnable)}
    cases |= {f"v{i}": (v.test, v.test, v) for i, v in enumerate(tried)}
    cases |= {f"c{i}": (c, c, None) for i, c in enumerate(controls(job, [str(nodes[t]) for t in runnable]))}
    texts = {k: v.source if v else _text(tree, node) for k, (_, node, v) in cases.items()}
    modules = [node.split("::")[0] for _, node, _ in cases.values()] + sorted(job.base.test_files)
    watch = {"base": observe_spec(changes, modules, job.staged.path), "patched": observe_spec(changes, modules, None)}
    bases, afters = _ask(box, cases, _restore(job.staged, changes), watch, texts) if cases else (_none(), _none())
    misread = next((a.problem for a in bases.values() if a.problem), None)
    if misread:  # only the base's own code ran there, never the diff's: the judge misread it, nobody cheated
        bases = {name: Answers(note=f"the judge could not read the base's run: {misread}") for name in bases}
    base, after = bases[CONTEXTS[0]], afters[CONTEXTS[0]]
    judged_in = {k: c for k in cases if k.startswith("t") and (c := _judged_in(k, cases[k][0], bases, job, before))}
    counted = list(judged_in)
    for k in cases:
        if k.startswith("t") and k not in counted:
            got = base.by_id.get(k, {})
            why = got.get("why") or _escaped(got) or base.note or (
                f"outside pytest it does not fail on the base as under pytest ({_said(got)})")
            out.judged_once.append({"test": cases[k][0], "why": str(why)})
    crash = _crash_of(job, [bases[c].by_id.get(k) for k, c in judged_in.items()])
    held = [k for k in cases if k.startswith("v") and crash is not None and _crash(base.by_id.get(k), *crash)
            and _of_counted(cases[k][1], counted, cases)]
    tried_tests = [k for k in cases if k.startswith("t")]
    for problem in [a.problem for a in afters.values()]:
        if problem:
            raise Refused("report_tampered", f"the second judge's evidence: {problem}; its results cannot be believed")
    seen = _seen(job, tree, cases, tried_tests, before, bases, afters)
    for k in counted:
        there = afters[judged_in[k]]
        got = there.by_id.get(k, {})
        if got.get("outcome") == "passed":
            out.judged_twice.append(cases[k][0])
        else:
            out.disagreed.append({"test": cases[k][0], "pytest": "passed", "second_judge": _said(got, there.note)})
    still = [v for k in held if (v := cases[k][2]) and crash and _crash(after.by_id.get(k), *crash)]
    once = [str(nodes[cases[k][0]]) for k in cases if k.startswith("t") and k not in counted]
    more, base_too, still_too = under_pytest(box, job.staged, tree, changes, once, _crash_of(job, []))
    tried, still, crashing = tried + more, still + still_too, len(held) + len(base_too)
    added = added_literals(changes, job.staged.path)
    cased = [v.quote for v in still if special_cased(v, added)]
    still_quotes = [v.quote for v in still]
    out.variants = {"tried": len(tried), "crash_the_base": crashing, "under_pytest": len(more), "still_crash": cased,
                    "still_crash_unheld": [q for q in still_quotes if q not in cased]}
    if out.variants["still_crash_unheld"]:
        out.warnings.append(f"{len(still) - len(cased)} variant(s) of the reproduction still crash with the diff "
                            "(it adds none of their literals, so they are not held against it), e.g. "
                            + out.variants["still_crash_unheld"][0])
    if tests and not out.judged_twice:
        out.warnings.append("no fail-to-pass test could be judged twice (outside pytest as well): "
                            + "; ".join(f"{j['test']}: {j['why']}" for j in out.judged_once[:3]))
    out.duration_s = time.monotonic() - started
    for summary in seen.judges.values():
        summary["duration_s"] = round(out.duration_s, 3)
    return out, seen


def _seen(job: Job, tree: StagedRepo, cases: dict[str, Case], tried: list[str], before: TestRun,
          bases: dict[str, Answers], afters: dict[str, Answers]) -> Seen:
    names = {k: cases[k][0] for k in cases}
    seen = runtime_evidence(bases, afters, names, tree.path)
    failures = before.stream.failures if before.stream else {}
    on_pytest = {cases[k][0]: outcome({"outcome": "failed", "exc": next((f.exc for f in failures.get(cases[k][0], [])
                                                                        if f.exc), "?")}) for k in tried}
    found, summary = compare({k: cases[k][0] for k in tried}, on_pytest, bases, afters,
                             {k: cases[k][0] for k in cases if k.startswith("c")})
    seen.evidence = [e for e in seen.evidence if e.refuses] + found + [e for e in seen.evidence if not e.refuses]
    seen.judges = {"context": summary, **seen.judges}
    return seen


def _none() -> dict[str, Answers]:
    return {name: Answers() for name in CONTEXTS}


def _text(tree: StagedRepo, node: str) -> str:
    try:
        return (tree.path / node.split("::")[0]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def verdict(judge: SecondJudge, job: Job) -> None:
    """Refused when the judges disagree or a variant still crashes; nothing when they agree."""
    if judge.disagreed:
        shown = "; ".join(f"{d['test']}: pytest {d['pytest']}, the second judge {d['second_judge']}"
                          for d in judge.disagreed[:3])
        raise Refused("behaves_differently", "the fix behaves differently outside pytest (run directly, from a "
                      f"random path, in an empty directory, with a bare environment): {shown}")
    still = judge.variants.get("still_crash") or []
    if still:
        raise Refused("overfitted", f"the fix handles only the tested input: with {still[0]}, the reproduction "
                      f"still raises {job.exc_type or 'the same exception'} through the crash site"
                      + (f" ({len(still)} variant(s) in all)" if len(still) > 1 else ""))


def controls(job: Job, nodes: list[str], per_module: int = CONTROLS) -> list[str]:
    """Tests beside the fail-to-pass ones (same module) that passed on the base under pytest: run on the base in
    the judge's contexts, they show which contexts the module's tests cannot take (a test that runs a script by
    a path relative to the tree) whatever the diff does."""
    modules = {n.split("::")[0] for n in nodes}
    out: list[str] = []
    for module in sorted(modules):
        siblings = sorted(t for t in job.base.suite.passed if t.split("::")[0] == module and t not in nodes)
        out += [t for t in siblings if "[" not in t][:per_module] or siblings[:per_module]
    return out


def _ask(box: Sandbox, cases: dict[str, Case], restore: dict[str, str | None], watch: dict[str, Any],
         texts: dict[str, str]) -> tuple[dict[str, Answers], dict[str, Answers]]:
    """Each case on the base tree and on the patched one, in its contexts (a test in every one, a variant in the
    first), each tree's cases in one process (as pytest runs them): answers by context, the base's and the
    patched tree's."""
    spec = {"cases": [{"id": f"{t}:{k}", "tree": t, "test": node, "source": v.source if v else None,
                       "group": t, "contexts": list(CONTEXTS[:1] if v else CONTEXTS),
                       "required": required(texts[k], node)} for t in TREES for k, (_, node, v) in cases.items()
                      if t == TREES[0] or not k.startswith("c")],
            "restore": restore, "patched": True, "contexts": list(CONTEXTS), "observe": watch}
    result = box.call(JudgeRequest(job=json.dumps(spec)))
    by_context = result.data.get("contexts")
    if not isinstance(by_context, dict):
        by_context = {CONTEXTS[0]: {"evidence": result.data.get("evidence"), "timed_out": result.timed_out}}
    base, patched = ({name: _answers(by_context.get(name) or {}, t, cases, result.output) for name in CONTEXTS}
                     for t in TREES)
    return base, patched


def _answers(data: dict[str, Any], tree: str, cases: dict[str, Case], output: str) -> Answers:
    got = data.get("evidence")
    out = Answers(note="timed out" if data.get("timed_out") else "")
    if not isinstance(got, dict):
        out.note = out.note or (output.strip().splitlines() or ["no answer"])[0][:200]
        return out
    out.problem = got.get("problem")
    records = got.get("records") or []
    if not any(r.get("k") == "end" for r in records) and not data.get("timed_out") and tree == TREES[1] and \
            any(r.get("k") == "begin" and r.get("group") == tree for r in records):
        out.problem = out.problem or ("the judge's key holder ended while the diff's code ran (exit code "
                                      f"{data.get('exit_code')}), before its end record")
    for rec in records:
        kind, (where, _, case) = rec.get("k"), str(rec.get("id") or rec.get("case") or "").partition(":")
        group = str(rec.get("group") or "")
        if kind == "test" and where == tree and case in cases:
            out.by_id[case] = rec
        elif kind == "obs" and where == tree:
            out.obs.append({**rec, "id": case})
        elif kind in ("group", "child") and group == tree:
            out.ended.append({**rec, "case": case or None})
        elif kind == "forged" and rec.get("group") in (None, tree):
            out.problem = out.problem or f"the test process wrote what the judge's child does not ({rec.get('why')})"
    return out


def _restore(staged: StagedRepo, changes: list[Change]) -> dict[str, str | None]:
    """The source files the diff changed, as they are on the base (None: the diff added it)."""
    out: dict[str, str | None] = {}
    for c in changes:
        base = staged.path / c.path
        out[c.path] = None if c.kind == "added" else base64.b64encode(base.read_bytes()).decode()
    return out


def _judged_in(k: str, test: str, bases: dict[str, Answers], job: Job, before: TestRun) -> str | None:
    """The context the second judge judges a test in: the first where it fails on the base as under pytest and
    with the message it fails with dressed as pytest (a script not found from an empty directory is another
    failure than the crash); None: in none of them (judged once)."""
    dressed = gist(bases[CONTEXTS[-1]].by_id.get(k))
    for name in CONTEXTS:
        rec = bases[name].by_id.get(k)
        if _fails_alike(rec, test, job, before) and gist(rec) in (None, dressed) and not (rec or {}).get("escaped"):
            return name
    return None


def _fails_alike(rec: dict[str, Any] | None, test: str, job: Job, before: TestRun) -> bool:
    """Whether the judge saw the test fail on the base as pytest did: the job's exception type through the
    crash site, else the type pytest saw (a test that needs pytest's working directory fails otherwise)."""
    seen = before.stream.failures.get(test, []) if before.stream else []
    exc = job.exc_type or next((f.exc for f in seen if f.exc), "")
    if not rec or rec.get("outcome") != "failed":
        return False
    return not exc or _crash(rec, exc, job.site if job.exc_type else None)


def _crash_of(job: Job, base: list[dict[str, Any] | None]) -> tuple[str, tuple[str, str] | None] | None:
    """The crash a variant must show: the job's exception type (else the one the tests raised on the base)
    and site. None when it would be an assertion's: a variant failing an assertion is no crash."""
    exc = job.exc_type or next((str(r.get("exc")) for r in base if r and r.get("exc")), "")
    if not exc or exc.rsplit(".", 1)[-1] == "AssertionError":
        return None
    return exc, job.site


def _crash(rec: dict[str, Any] | None, exc: str, site: tuple[str, str] | None) -> bool:
    """Whether the record shows a failure with the exception type through the crash site."""
    if not rec or rec.get("outcome") != "failed":
        return False
    frames = [(str(f[0]), str(f[1])) for f in rec.get("frames") or []]
    stream = Stream(failed={"x"}, failures={"x": [Failure(str(rec.get("exc") or ""), frames)]})
    return crashed(stream, {"x"}, exc, site)


def _escaped(rec: dict[str, Any]) -> str:
    """Why a side's run is not its own: it loaded modules from the box's copy of the repository (roots.py)."""
    names = rec.get("escaped") or []
    return f"its run imported the box's own copy of {', '.join(map(str, names[:3]))}, not its side's tree" if names \
        else ""


def _of_counted(node: str, counted: list[str], cases: dict[str, Case]) -> bool:
    return any(cases[k][1] == node for k in counted)


def _said(rec: dict[str, Any], note: str = "") -> str:
    if not rec:
        return f"left no record ({note})" if note else "left no record"
    outcome = str(rec.get("outcome"))
    if outcome == "failed":
        return f"failed ({rec.get('exc')}: {str(rec.get('message') or '')[:120]})"
    return f"{outcome} ({rec['why']})" if rec.get("why") else outcome


def _node_id(test: str, files: list[str]) -> str | None:
    """A pytest node id for a fail-to-pass test: as is, or from a unittest id (`pkg.test_x.Case.test_y`)."""
    if "::" in test:
        return test if test.split("::")[0].endswith(".py") else None
    parts = test.split(".")
    for n in range(len(parts) - 1, 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if path in files:
            return "::".join([path, *parts[n:]])
    return None
