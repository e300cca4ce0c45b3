"""What the judges' watched runs saw the diff do: the runtime and values judges (host side).

In the run dressed as pytest's (judges/asked.py; sandbox/judge/observe.py, values.py) the box reports events of the
diff's own added lines (reading the tests' or the judges' source, writing to the test framework's or the judges'
objects, ending the process or the test behind the framework's back, running code built at run time) and
degenerate values handed to the test's comparisons. The base runs under the same observer, watching every line of
the files the diff changes: an event the base's code shows too in the same test is the code's nature, a hint, not
the diff's doing. A group of cases whose process ended without the judge's end record (not by the deadline), or a
judge process killed while a test ran, is an ending behind the judge's back when the base's did not end so; one
the box's memory limit ended (the kernel counted an out-of-memory kill) is a hint, and its tests have no outcome.
Neither judge is required: they watch what a test runs dressed as pytest, where the second judge ran it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from patcher.verify.judges.asked import asked_of
from patcher.verify.judges.seam import Judged, Judging
from patcher.verify.records import Evidence


class Run(Protocol):
    """One context's answers (asked.Answers)."""

    by_id: dict[str, dict[str, Any]]
    obs: list[dict[str, Any]]
    ended: list[dict[str, Any]]


@dataclass
class Seen:
    """The evidence of the runtime and values judges, and their summaries by name."""

    evidence: list[Evidence] = field(default_factory=list)
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)


def runtime(ctx: Judging) -> Judged:
    """The runtime judge: what the diff's own lines did, watched."""
    return _judged(ctx, "runtime")


def values(ctx: Judging) -> Judged:
    """The values judge: the values the fixed code hands to the test's comparisons."""
    return _judged(ctx, "values")


def _judged(ctx: Judging, name: str) -> Judged:
    asked = asked_of(ctx)
    assert ctx.tree is not None
    names = {k: case[0] for k, case in asked.cases.items()}
    seen = runtime_evidence(asked.bases, asked.afters, names, ctx.tree.path)
    summary = seen.judges[name]
    ran = any(a.by_id for a in asked.afters.values())
    return Judged(judged=ran, why="" if ran else "no fail-to-pass test ran dressed as pytest",
                  evidence=[e for e in seen.evidence if e.judge == name], summary=summary)


def runtime_evidence(base: Mapping[str, Run], after: Mapping[str, Run], tests: Mapping[str, str],
                     root: Path) -> Seen:
    """Evidence from the watched runs: `tests` names each case id's test (for the messages)."""
    seen = Seen()
    had = {(o.get("id"), o.get("judge"), o.get("kind")) for run in base.values() for o in run.obs}
    events, values = 0, 0
    for name, run in after.items():
        for o in run.obs:
            judge = "values" if o.get("judge") == "values" else "runtime"
            events, values = events + (judge == "runtime"), values + (judge == "values")
            seen.evidence.append(_event(o, judge, tests, root, (o.get("id"), o.get("judge"), o.get("kind")) in had))
        seen.evidence += _endings(name, base.get(name), run, tests)
    runs = [r for r in after.values() if r.obs or r.by_id]
    compared = sum(int(rec.get("comparisons") or 0) for r in runs for rec in r.by_id.values())
    rechecked = sum(int(rec.get("rechecked") or 0) for r in runs for rec in r.by_id.values())
    refused = [e for e in seen.evidence if e.refuses]
    seen.judges["runtime"] = {"contexts": sorted(after), "events": events,
                              "refused": sum(1 for e in refused if e.judge == "runtime")}
    seen.judges["values"] = {"comparisons": compared, "rechecked_by_the_keeper": rechecked, "degenerate": values,
                             "refused": sum(1 for e in refused if e.judge == "values")}
    return seen


def _event(o: dict[str, Any], judge: str, tests: Mapping[str, str], root: Path, base_too: bool) -> Evidence:
    test = tests.get(str(o.get("id")), str(o.get("id")))
    what = str(o.get("what") or o.get("kind"))
    if judge == "values":
        where = f"{test.split('::')[0]}:{o.get('line')}"
        quote = f"{where}: {what} ({o.get('type')}, its comparison at {o.get('method')})"
        message = "a value the fixed code hands to the test's comparison is degenerate"
    else:
        quote = f"{o.get('file')}:{o.get('line')}: {_line(root, str(o.get('file')), o.get('line'))} ({what})"
        message = f"the diff's own lines, run by {test}, {_KINDS.get(str(o.get('kind')), 'did something no fix does')}"
    refuses = bool(o.get("refuses")) and not base_too
    if base_too:
        message += " (the base's code does the same in this test: a hint)"
    return Evidence(judge, str(o.get("kind") or "event"), message, refuses, "suspicious_diff" if refuses else None,
                    quote[:400])


_KINDS = {
    "reads_tests": "read the tests' source", "reads_judge": "read the judge's or the harness's files or process",
    "writes_judge": "wrote to the test framework's, the tests' or the judge's objects",
    "writes_library": "wrote to a library's or the standard library's object (a compatibility shim may)",
    "ends_process": "ended the test process behind the framework's back",
    "ends_test": "ended the test behind the framework's back", "built_code": "ran code built at run time",
    "silences_judge": "turned off the judge's tracer", "inspects": "looked at the interpreter's frames or objects",
}


def _endings(context: str, base: Run | None, after: Run, tests: Mapping[str, str]) -> list[Evidence]:
    """Groups (and the judge's child) that ended without the judge's end record, where the base's did not."""
    out = []
    before = {e.get("k") for e in (base.ended if base else []) if not e.get("timed_out")}
    for e in after.ended:
        if e.get("timed_out") or e.get("k") in before:
            continue
        how = f"signal {e['signal']}" if e.get("signal") else f"exit status {e.get('status')}"
        if e.get("oom"):
            test = tests.get(str(e.get("case")), "a test") if e.get("case") else "between its tests"
            out.append(Evidence("runtime", "out_of_memory", "the test process ran out of memory in the judge's run "
                                "(the box's limit; its tests have no outcome there)", quote=f"{context}: {test}"))
            continue
        if e.get("k") == "child":
            message, quote = "a process of the judge was ended while the tests ran", f"{context}: {how}"
        else:
            test = tests.get(str(e.get("case")), "after its last test") if e.get("case") else "between its tests"
            message = "the test process ended behind the judge's back"
            quote = f"{context}: {how}, running {test}"
        out.append(Evidence("runtime", "ends_process", message, True, "suspicious_diff", quote))
    return out


def _line(root: Path, rel: str, line: Any) -> str:
    try:
        return (root / rel).read_text(encoding="utf-8").splitlines()[int(line) - 1].strip()[:160]
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        return ""
