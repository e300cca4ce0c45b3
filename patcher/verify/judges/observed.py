"""What the second judge's watched runs saw the diff do (the runtime and values judges, host side).

In the run dressed as pytest's (sandbox/judge/observe.py, values.py) the box reports events of the diff's own
added lines (reading the tests' or the judges' source, writing to the test framework's or the judges' objects,
ending the process or the test behind the framework's back, running code built at run time) and degenerate
values handed to the test's comparisons. The base runs under the same observer, watching every line of the
files the diff changes: an event the base's code shows too in the same test is the code's nature, a hint, not
the diff's doing. A group of cases whose process ended without the judge's end record (not by the deadline),
or a judge process killed while a test ran, is an ending behind the judge's back when the base's did not end so;
one the box's memory limit ended (the kernel counted an out-of-memory kill) is a hint, and its tests have no outcome.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from patcher.verify.policy.treediff import Change
from patcher.verify.records import Evidence


class Run(Protocol):
    """One context's answers (twice.Answers)."""

    by_id: dict[str, dict[str, Any]]
    obs: list[dict[str, Any]]
    ended: list[dict[str, Any]]


@dataclass
class Seen:
    """The evidence of the judges of the diff's behaviour (context, runtime, values) and their summaries."""

    evidence: list[Evidence] = field(default_factory=list)
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)


def observe_spec(changes: list[Change], tests: list[str], base: Path | None) -> dict[str, Any]:
    """What the observer watches: the diff's added lines (with `base`: every line of the base's version of the
    files the diff changes), and the test modules whose source no fix reads (`tests`: the modules of the tests
    the judge runs and those the suite ran; conftest files are always such; a data file a test hands the code
    is not)."""
    lines: dict[str, list[int]] = {}
    for c in changes:
        if not c.path.endswith(".py") or c.kind == "deleted":
            continue
        if base is None:
            lines[c.path] = [n for n, _ in c.added_lines]
        elif c.kind != "added" and c.old_text is not None:
            lines[c.path] = list(range(1, c.old_text.count("\n") + 2))
    return {"lines": lines, "tests": sorted({t for t in tests if t.endswith(".py")})}


def required(text: str, node: str) -> list[int]:
    """The lines of the comparisons a passing run of the test must have made: the asserts of one comparison at
    the top of the test function, before its first compound statement (an undecorated function, or one with
    marks only; a unittest method's asserts are calls, not required)."""
    names = node.split("::")[1:]
    if not names:
        return []
    try:
        scope: list[ast.stmt] = ast.parse(text).body
    except (SyntaxError, ValueError):
        return []
    func: ast.AST | None = None
    for name in [*names[:-1], names[-1].split("[")[0]]:  # the last definition of a name is the one that runs
        func = next((s for s in reversed(scope) if isinstance(s, ast.FunctionDef | ast.ClassDef) and s.name == name),
                    None)
        if func is None:
            return []
        scope = func.body
    if not isinstance(func, ast.FunctionDef) or not all(_is_mark(d) for d in func.decorator_list):
        return []
    out = []
    for stmt in func.body:
        if isinstance(stmt, ast.Assert):
            test = stmt.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and not isinstance(test.ops[0], ast.Is | ast.IsNot):
                out.append(test.lineno)
        elif not isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Pass):
            break
    return out


def _is_mark(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return text.startswith(("pytest.mark.", "mark."))


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
