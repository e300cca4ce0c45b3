"""The judges' run outside pytest: one call of the image's own runner that several judges read.

A fresh box holds the tree the fail-to-pass tests were judged on (the judges' box for the base's half made beside
pytest; after pytest, where the held-out judge goes on in that box, a second fresh box on the same tree). The
image's own runner (sandbox/judge/, no test framework; sandbox/judging.py gives it random copies of the tree, an
empty working directory and a bare environment) runs the cases on the base (the files the diff's source part changed
put back) and with the diff, in two contexts (`bare`, as an application runs; `dressed`, as pytest runs, where the
diff's lines and the compared values are watched). The cases: each fail-to-pass test (`t`), the perturbed variants
of its literals (`v`, bare only) and, on the base, passing tests of the same modules (`c`, the controls). The base's
half runs first, beside pytest where it can (judges/box.py); the diff's half, after pytest, runs the tests and the
variants that crashed the base as the reproduction does. Outcomes come back signed, by case id, for the second,
context, runtime, values and perturbed judges."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.job import Job
from patcher.verify.judges.seam import Judging
from patcher.verify.judges.variants import Variant, variants
from patcher.verify.judges.watch import observe_spec, required
from patcher.verify.policy.treediff import Change
from patcher.verify.stream import Failure, Stream, crashed, type_matches
from patcher.verify.testruns import TestRun
from sandbox.protocol import JudgeRequest

Case = tuple[str, str, Variant | None]
"""(the test as pytest named it, its node id, the variant or None for the test itself), by case id."""
CONTEXTS = ("bare", "dressed")
"""The judge's contexts (sandbox/judging.py): the variants run in the first only."""
TREES = ("base", "patched")
CONTROLS = 2
"""Passing tests per module of the fail-to-pass ones run on the base in every context (controls)."""
Crash = tuple[str, tuple[str, str] | None]
"""The exception type and crash site a case must show to crash as the reproduction did."""


@dataclass
class Answers:
    """One context's records on one tree by case id: {"outcome", "exc", "frames", "why"}; `problem` when forged;
    what the observers saw (`obs`) and the groups or child processes that ended without the judge's end (`ended`)."""

    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None
    note: str = ""
    obs: list[dict[str, Any]] = field(default_factory=list)
    ended: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Asked:
    """The run, read: its cases, each context's answers on both trees, and which tests it judged twice."""

    cases: dict[str, Case]
    unaddressed: list[str]
    """Fail-to-pass tests that are no test function the judge can address (judged once)."""
    bases: dict[str, Answers]
    afters: dict[str, Answers]
    judged_in: dict[str, str]
    """Test case id -> the context it is judged in: where it fails on the base as under pytest."""
    crash: Crash | None
    """What a variant must show to crash the base as the reproduction does (None: an assertion's failure)."""
    misread: str = ""
    """Why the base's run could not be read (its records forged while only the base's own code ran)."""
    alongside_s: float = 0.0
    """The base's half's time where it was made while pytest verified (else in the first reader's own time)."""

    def tests(self) -> list[str]:
        return [k for k in self.cases if k.startswith("t")]


@dataclass
class BaseRun:
    """The run's half on the base: made in the judges' box while pytest verifies (only the base's code runs there,
    as in the held-out judge's recording), or after pytest by the first judge that needs it."""

    tests: list[str]
    cases: dict[str, Case]
    unaddressed: list[str]
    texts: dict[str, str]
    watch: dict[str, Any]
    bases: dict[str, Answers]
    duration_s: float = 0.0


def asked_of(ctx: Judging) -> Asked:
    """The run for `ctx` (made by the first judge that needs it): the base's half made beside pytest where it
    asked of the same tests, and the diff's half."""
    if "asked" not in ctx.shared:
        assert ctx.box is not None and ctx.tree is not None and ctx.before is not None
        if "base_run_wait" in ctx.shared:  # begun beside pytest in the judges' box (judges/box.py): under way
            ctx.shared.pop("base_run_wait")()
        early: Any = ctx.shared.get("base_run")
        tests = ctx.found.fail_to_pass
        beside = isinstance(early, BaseRun) and early.tests == tests  # made while pytest verified, of these tests
        base: BaseRun = early if beside else on_base(ctx.job, ctx.box, ctx.tree, ctx.source, tests)
        ctx.shared["asked"] = _with_diff(ctx.job, ctx.box, base, ctx.before, base.duration_s if beside else 0.0)
    got: Asked = ctx.shared["asked"]
    return got


def on_base(job: Job, box: Sandbox, tree: StagedRepo, changes: list[Change], tests: list[str],
            serial: bool = False) -> BaseRun:
    """Every case on the base tree (the files the diff's source part changed put back), in its contexts (`serial`:
    one after the other, made beside a pytest run)."""
    started = time.monotonic()
    nodes = {t: node_id(t, tree.files) for t in tests}
    runnable = [t for t, n in nodes.items() if n]
    tried = variants(tree.path, [str(nodes[t]) for t in runnable]) if runnable else []
    cases: dict[str, Case] = {f"t{i}": (t, str(nodes[t]), None) for i, t in enumerate(runnable)}
    cases |= {f"v{i}": (v.test, v.test, v) for i, v in enumerate(tried)}
    cases |= {f"c{i}": (c, c, None) for i, c in enumerate(controls(job, [str(nodes[t]) for t in runnable]))}
    texts = {k: v.source if v else _text(tree, node) for k, (_, node, v) in cases.items()}
    modules = [node.split("::")[0] for _, node, _ in cases.values()] + sorted(job.base.test_files)
    watch = {"base": observe_spec(changes, modules, job.staged.path), "patched": observe_spec(changes, modules, None)}
    bases = _ask(box, cases, TREES[0], restore(job.staged, changes), watch, texts, serial) if cases else _none()
    return BaseRun(list(tests), cases, [t for t, n in nodes.items() if not n], texts, watch, bases,
                   round(time.monotonic() - started, 3))


def _with_diff(job: Job, box: Sandbox, early: BaseRun, before: TestRun, alongside_s: float) -> Asked:
    """The diff's half: each test, and the variants that crash the base as the reproduction does (the others
    say nothing of the diff), on the patched tree; the controls ran on the base only."""
    cases, bases = early.cases, early.bases
    misread = next((a.problem for a in bases.values() if a.problem), None) or ""
    if misread:  # only the base's own code ran there, never the diff's: the judge misread it, nobody cheated
        bases = {name: Answers(note=f"the judge could not read the base's run: {misread}") for name in bases}
    judged_in = {k: c for k in cases if k.startswith("t") and (c := _judged_in(k, cases[k][0], bases, job, before))}
    crash = crash_of(job, [bases[c].by_id.get(k) for k, c in judged_in.items()])
    counted = {cases[k][1] for k in judged_in}
    first = bases[CONTEXTS[0]]
    diff_cases = {k: c for k, c in cases.items() if k.startswith("t") or (
        k.startswith("v") and crash is not None and c[1] in counted and crashes(first.by_id.get(k), *crash))}
    afters = _ask(box, diff_cases, TREES[1], {}, early.watch, early.texts) if diff_cases else _none()
    return Asked(cases, early.unaddressed, bases, afters, judged_in, crash, misread, alongside_s)


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


def _none() -> dict[str, Answers]:
    return {name: Answers() for name in CONTEXTS}


def _text(tree: StagedRepo, node: str) -> str:
    try:
        return (tree.path / node.split("::")[0]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _ask(box: Sandbox, cases: dict[str, Case], tree: str, restored: dict[str, str | None], watch: dict[str, Any],
         texts: dict[str, str], serial: bool = False) -> dict[str, Answers]:
    """Each case on one tree (`base`: the files in `restored` put back) in its contexts (a test in every one, a
    variant in the first), the tree's cases in one process (as pytest runs them): its answers by context. `serial`:
    the contexts one after the other, not side by side (beside a pytest run, on a machine of two cores, side by
    side slows that run as much as it saves)."""
    spec = {"cases": [{"id": f"{tree}:{k}", "tree": tree, "test": node, "source": v.source if v else None,
                       "group": tree, "contexts": list(CONTEXTS[:1] if v else CONTEXTS),
                       "required": required(texts[k], node)} for k, (_, node, v) in cases.items()],
            "restore": restored, "trees": [tree], "contexts": list(CONTEXTS), "observe": watch,
            "serial": serial}
    result = box.call(JudgeRequest(job=json.dumps(spec)))
    by_context = result.data.get("contexts")
    if not isinstance(by_context, dict):
        by_context = {CONTEXTS[0]: {"evidence": result.data.get("evidence"), "timed_out": result.timed_out}}
    return {name: _answers(by_context.get(name) or {}, tree, cases, result.output) for name in CONTEXTS}


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


def restore(staged: StagedRepo, changes: list[Change]) -> dict[str, str | None]:
    """The source files the diff changed, as they are on the base (None: the diff added it)."""
    out: dict[str, str | None] = {}
    for c in changes:
        base = staged.path / c.path
        out[c.path] = None if c.kind == "added" else base64.b64encode(base.read_bytes()).decode()
    return out


def _judged_in(k: str, test: str, bases: dict[str, Answers], job: Job, before: TestRun) -> str | None:
    """The context the second judge judges a test in: the first where it fails on the base as under pytest and
    with the message it fails with dressed as pytest (a script not found from an empty directory is another
    failure than the crash), its run its side's own; None: in none of them (judged once)."""
    dressed = gist(bases[CONTEXTS[-1]].by_id.get(k))
    for name in CONTEXTS:
        rec = bases[name].by_id.get(k)
        if _fails_alike(rec, test, job, before) and gist(rec) in (None, dressed) and not (rec or {}).get("escaped"):
            return name
    return None


def _fails_alike(rec: dict[str, Any] | None, test: str, job: Job, before: TestRun) -> bool:
    """Whether the judge saw the test fail on the base as pytest did: through the crash site where pytest saw it
    fail so, else with the type pytest saw (another test than the traceback's: an assertion of its own)."""
    if not rec or rec.get("outcome") != "failed":
        return False
    seen = before.stream.failures.get(test, []) if before.stream else []
    if job.exc_type and (not seen or crashed(Stream(failed={test}, failures={test: seen}), {test}, job.exc_type,
                                             job.site)):
        return crashes(rec, job.exc_type, job.site)
    types = [f.exc for f in seen if f.exc]
    return not types or any(type_matches(str(rec.get("exc") or ""), t) for t in types)


def crash_of(job: Job, base: list[dict[str, Any] | None]) -> Crash | None:
    """The crash a variant must show: the job's exception type (else the one the tests raised on the base)
    and site. None when it would be an assertion's: a variant failing an assertion is no crash."""
    exc = job.exc_type or next((str(r.get("exc")) for r in base if r and r.get("exc")), "")
    if not exc or exc.rsplit(".", 1)[-1] == "AssertionError":
        return None
    return exc, job.site


def crashes(rec: dict[str, Any] | None, exc: str, site: tuple[str, str] | None) -> bool:
    """Whether the record shows a failure with the exception type through the crash site."""
    if not rec or rec.get("outcome") != "failed":
        return False
    frames = [(str(f[0]), str(f[1])) for f in rec.get("frames") or []]
    stream = Stream(failed={"x"}, failures={"x": [Failure(str(rec.get("exc") or ""), frames)]})
    return crashed(stream, {"x"}, exc, site)


def said(rec: dict[str, Any], note: str = "") -> str:
    """A record's outcome in words."""
    if not rec:
        return f"left no record ({note})" if note else "left no record"
    outcome = str(rec.get("outcome"))
    if outcome == "failed":
        return f"failed ({rec.get('exc')}: {str(rec.get('message') or '')[:120]})"
    return f"{outcome} ({rec['why']})" if rec.get("why") else outcome


def escaped(rec: dict[str, Any]) -> str:
    """Why a side's run is not its own: it loaded modules from the box's copy of the repository (roots.py)."""
    names = rec.get("escaped") or []
    return f"its run imported the box's own copy of {', '.join(map(str, names[:3]))}, not its side's tree" if names \
        else ""


def gist(rec: Mapping[str, Any] | None) -> str | None:
    """A failure's message with what a context changes by itself masked (paths, addresses, numbers); None where
    the record has none (a pass, a skip, pytest's own run)."""
    if not rec or rec.get("outcome") != "failed" or rec.get("message") is None:
        return None
    text = re.sub(r"(?:/[^\s'\":,)]+)+", "<path>", str(rec["message"])[:300])
    return re.sub(r"\d+", "0", re.sub(r"0x[0-9a-fA-F]+", "<addr>", text)).strip()


def node_id(test: str, files: list[str]) -> str | None:
    """A pytest node id for a fail-to-pass test: as is, or from a unittest id (`pkg.test_x.Case.test_y`)."""
    if "::" in test:
        return test if test.split("::")[0].endswith(".py") else None
    parts = test.split(".")
    for n in range(len(parts) - 1, 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if path in files:
            return "::".join([path, *parts[n:]])
    return None
