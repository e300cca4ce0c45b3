"""The run's context does not change the answer (the context judge, host side).

Each fail-to-pass test has run on the base and with the diff in several contexts: pytest (the verification
runs) and the second judge's `bare` and `dressed` runs (sandbox/judging.py says how they differ: flags, argv,
working directory, the tree's path, environment, test framework loaded, tracer). Any two contexts in which
the base's outcome is the same (passed, skipped, or failed with the same exception type and message, paths and
numbers aside) must give the same outcome with the diff; where they do not, the diff's behaviour depends on
something production never sees (`behaves_differently`, both contexts quoted). Contexts where the base's
outcomes differ (a test that needs pytest's working directory) are not compared, and a context that could not
run a test is left out. Where the base fails a test everywhere (the crash), tests beside it that pass on the
base (controls, run on the base in every context) show which contexts the module's tests cannot take at all:
those are not compared for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any, Protocol

from patcher.verify.judges.asked import CONTEXTS, asked_of, gist
from patcher.verify.judges.seam import Judged, Judging
from patcher.verify.records import Evidence

PYTEST = "pytest"
DRESSED = "dressed"
"""The judge's context that stands for pytest's where pytest's record has no message."""
WORDS = {
    PYTEST: "under pytest (its argv, environment, plugins, the tree at its own path as working directory)",
    "bare": "run as an application would (python -S -E -s, argv naming a script, an empty working directory, "
            "PATH, HOME and LANG only, no test framework loaded)",
    "dressed": "run dressed as pytest (python -S -I, pytest's argv, environment variables and modules, the tree "
               "as working directory, output captured, the diff's lines traced)",
}


class Run(Protocol):
    by_id: dict[str, dict[str, Any]]


def context(ctx: Judging) -> Judged:
    """The judge: each fail-to-pass test's outcomes over pytest and the judges' two contexts, base against diff.
    It judged when at least one pair of contexts could be compared."""
    asked = asked_of(ctx)
    tried = asked.tests()
    failures = ctx.before.stream.failures if ctx.before and ctx.before.stream else {}
    on_pytest = {asked.cases[k][0]: outcome({"outcome": "failed", "exc": next(
        (f.exc for f in failures.get(asked.cases[k][0], []) if f.exc), "?")}) for k in tried}
    found, summary = compare({k: asked.cases[k][0] for k in tried}, on_pytest, asked.bases, asked.afters,
                             {k: asked.cases[k][0] for k in asked.cases if k.startswith("c")})
    pairs = int(summary.get("pairs_compared") or 0)
    summary["alongside_s"] = asked.alongside_s
    return Judged(judged=pairs > 0, why="" if pairs else "no two contexts in which the base's outcome is the same "
                  f"could be compared (the {', '.join(CONTEXTS)} runs on the base: {_bases(asked, tried)})",
                  evidence=found, summary=summary)


def _bases(asked: Any, tried: list[str]) -> str:
    return "; ".join(f"{name} {outcome(asked.bases[name].by_id.get(k)) or 'no outcome'}" for k in tried[:1]
                     for name in CONTEXTS) or "no test ran"


def outcome(rec: Mapping[str, Any] | None) -> str | None:
    """passed, skipped, or failed:<exception type>; None where the context could not say."""
    if not rec or rec.get("outcome") in (None, "unjudged"):
        return None
    if rec.get("outcome") == "failed":
        return f"failed:{str(rec.get('exc') or '?').rsplit('.', 1)[-1]}"
    return str(rec["outcome"])


def compare(cases: Mapping[str, str], pytest_base: Mapping[str, str | None], base: Mapping[str, Run],
            after: Mapping[str, Run], controls: Mapping[str, str] | None = None
            ) -> tuple[list[Evidence], dict[str, Any]]:
    """`cases`: case id -> test; `pytest_base`: the test's outcome under pytest on the base (its pytest outcome
    with the diff is a pass: it is a fail-to-pass test); `controls`: case id -> a test of the same module that
    passed on the base under pytest. A context in which a control does not pass on the base is one the module's
    tests cannot take: it is not compared for that module's tests (a hint says so)."""
    evidence: list[Evidence] = []
    pairs = 0
    unfit = _unfit(controls or {}, base)
    for case, test in cases.items():
        before = {name: outcome(run.by_id.get(case)) for name, run in base.items()}
        now = {name: outcome(run.by_id.get(case)) for name, run in after.items()}
        before[PYTEST], now[PYTEST] = pytest_base.get(test), "passed"
        msg = {name: gist(run.by_id.get(case)) for name, run in base.items()}
        msg[PYTEST] = msg.get(DRESSED) if before[PYTEST] == before.get(DRESSED) else None
        skip = unfit.get(_module(test), {})
        usable = [c for c in [PYTEST, *sorted(base)] if before.get(c) and now.get(c) and c not in skip]
        for one, two in combinations(usable, 2):
            if before[one] != before[two] or (None not in (msg[one], msg[two]) and msg[one] != msg[two]):
                continue  # the base fails otherwise there (another message: a script not found, not the crash)
            pairs += 1
            if now[one] != now[two]:
                evidence.append(_differs(test, one, two, before[one], now))
                break
    for module, where in sorted(unfit.items()):
        for context, (control, got) in sorted(where.items()):
            evidence.append(Evidence("context", "context_unfit", f"the tests of {module} are not compared "
                                     f"{WORDS.get(context, context)}: a test beside them that passes under pytest "
                                     "does not there, on the base", quote=f"{control} {_said(got)}"))
    summary = {"contexts": [PYTEST, *sorted(base)], "tests": len(cases), "pairs_compared": pairs,
               "differences": len(evidence) - sum(len(w) for w in unfit.values()), "controls": len(controls or {})}
    return evidence, summary


def _module(test: str) -> str:
    return test.split("::")[0]


def _unfit(controls: Mapping[str, str], base: Mapping[str, Run]) -> dict[str, dict[str, tuple[str, str | None]]]:
    """By module, the contexts in which a control did not pass on the base (with the control and its outcome)."""
    out: dict[str, dict[str, tuple[str, str | None]]] = {}
    for case, test in controls.items():
        for name, run in base.items():
            got = outcome(run.by_id.get(case))
            if got is not None and got != "passed":
                out.setdefault(_module(test), {}).setdefault(name, (test, got))
    return out


def _differs(test: str, one: str, two: str, was: str | None, now: Mapping[str, str | None]) -> Evidence:
    quote = (f"{test} {_said(now[one])} {WORDS.get(one, one)}, and {_said(now[two])} {WORDS.get(two, two)}; "
             f"on the base it {_said(was)} in both")
    return Evidence("context", "depends_on_context", "the fix's outcome depends on the run's context, where the "
                    "base's does not", True, "behaves_differently", quote)


def _said(got: str | None) -> str:
    kind, _, exc = str(got).partition(":")
    return f"{kind} ({exc})" if exc else kind
