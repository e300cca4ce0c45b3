"""Held-out inputs asked inside the test's own run: the host side (the box side: sandbox/judge/heldout/inrun.py).

The failing test runs as the verification's runs do (`python -m pytest -q NODE` under the harness, in the judges'
box, at the repository's own path, with the base's files put back for the base's side), with the held-out job sent
after the run's key. At the tested call (met by its recorded arguments) each input is asked in a process forked
there: input 0 is the tested call itself, every argument the live object the test passed; input 1 the same
values rebuilt (equal, not identical: a check of `is` or an interned constant meets it); then the drawn ones. What
is not plain data stays the live object; an instance's plain attributes may be varied on a copy of the test's own.
So the inputs meet the function in the test's process, with its fixtures, monkeypatches, limits, environment and
objects, where nothing the code can read tells them from the test's own call but the trace hook that found it
(and the fork). Two checks rest on that: with the diff, the test's own call must pass in that run as under pytest,
and input 0 must not crash as the base did while the test's own call passes (`tells_apart`): else the code answers
the judge otherwise than the test (`behaves_differently`).
"""

from __future__ import annotations

import ast
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patcher.intake import StagedRepo
from patcher.sandbox import Sandbox
from patcher.verify.judges.heldout.answers import Answer, Sides, shown
from patcher.verify.judges.heldout.target import Call, Target
from patcher.verify.records import Evidence
from patcher.verify.testruns import run_tests
from sandbox.protocol import WriteFileRequest

PER_CALL_S = 2.0
CALLS_S = 10.0
"""Time for all the inputs of one side; inputs past it are skipped (not judged)."""
MAX_JOB_BYTES = 512 * 1024
LIVE = {"live": True}


@dataclass
class Side:
    """One side's run: each input's answer ([the tested call, its copy, *drawn]), the test's own outcome there."""

    answers: list[Answer] = field(default_factory=list)
    passed: bool = False
    crashed: bool = False
    """The test failed there with the crash (the traceback's exception through the crash site)."""
    note: str = ""


@dataclass
class InRun:
    """One failing test's tested call, asked inside its own run on both sides."""

    test: str
    node: str
    frame: dict[str, Any]
    """The recorded frame of the tested call (file, first, func, full: the call as its parameters took it)."""
    target: Target
    inputs: list[Call]
    """[the tested call rebuilt, *drawn] (the tested call itself goes first, live, as input 0)."""
    seeds: list[Any] = field(default_factory=list)
    base: Side | None = None
    patched: Side | None = None

    def job(self, site: tuple[str, str] | None, lines: dict[str, list[int]], first: int) -> str:
        """The job the harness asks inside the run, the function's code found at `first` (its first line on this
        side); inputs dropped from the end past MAX_JOB_BYTES."""
        inputs: list[Any] = [LIVE, *self.inputs]
        target = {"file": self.frame["file"], "first": first, "func": self.frame["func"]}
        spec = {"target": target, "call": self.frame["full"], "n": self.frame.get("n"),
                "inputs": inputs, "site": list(site) if site else None, "lines": lines, "per_call_s": PER_CALL_S,
                "total_s": CALLS_S}
        text = json.dumps(spec)
        while len(text) > MAX_JOB_BYTES and len(spec["inputs"]) > 2:
            spec["inputs"] = spec["inputs"][: len(spec["inputs"]) * 3 // 4]
            text = json.dumps(spec)
        return text


def ask(box: Sandbox, plan: InRun, job: Any, lines: dict[str, list[int]], base_files: dict[str, str] | None,
        tree: StagedRepo) -> Side:
    """One side's answers: the test run with the job; on the base's side (`base_files`: the changed files as the
    base has them) those files are written in for the run and the diff's written back after."""
    first = int(plan.frame["first"])
    if base_files:
        _write(box, base_files)
    else:  # the diff's side: the function where the diff's text has it (lines above it added or taken away)
        first = _moved(job.staged.path / plan.frame["file"], tree.path / plan.frame["file"], first)
    try:
        run = run_tests(box, f"python -m pytest -q {shlex.quote(plan.node)}", "held-out-in-run",
                        heldout=plan.job(job.site, lines, first))
    finally:
        if base_files:
            _write(box, {rel: (tree.path / rel).read_text(encoding="utf-8") for rel in base_files})
    side = Side(passed=run.outcome == "passed", crashed=run.crashed(job.exc_type, job.site))
    if run.tampered:
        side.note = f"the run's records cannot be believed ({run.tampered})"
        return side
    head = next((r for r in run.records if r.get("k") == "inrun"), None)
    if head is None or not head.get("ok"):
        other = next((r for r in run.records if r.get("k") == "inrun_other"), None)
        seen = f"; met with {_shown(other['call'])} where the recording has {_shown(plan.frame['full'])}" \
            if other else ""
        side.note = (str(head.get("why")) if head else "the tested call was not met in the test's run (its arguments "
                     f"were not the recorded ones{seen})") if run.reported else \
            f"the test did not run ({run.output_tail.strip()[-160:]})"
        return side
    by_index = {int(r["i"]): r for r in run.records if r.get("k") == "call" and isinstance(r.get("i"), int)}
    side.answers = [Answer.of(by_index.get(i)) for i in range(len(plan.inputs) + 1)]
    return side


def sides(plan: InRun) -> Sides | None:
    """Both sides' answers as the rules read them: the tested call (input 0) as each of the reproduction's three
    rounds, then the inputs; None without both sides' answers."""
    base, patched = plan.base, plan.patched
    if base is None or patched is None or not base.answers or not patched.answers:
        return None
    tb, tp = base.answers[0], patched.answers[0]
    return Sides(plan.target, plan.inputs, [tb, tb, tb, *base.answers[1:]], [tp, tp, tp, *patched.answers[1:]],
                 plan.seeds)


def checks(plan: InRun) -> list[Evidence]:
    """What the test's own run shows with the diff: the test fails there with the crash (as on the base), or the
    tested call asked there crashes as on the base while the test's own call passes."""
    base, patched = plan.base, plan.patched
    if base is None or patched is None or not base.crashed:
        return []
    call = shown(plan.target, plan.target.tested)
    if patched.crashed:
        return [Evidence("held_out", "fails_watched", "with the diff, the failing test still fails with the crash "
                         "in the held-out judge's run (its inputs asked at the tested call), where it passes under "
                         "pytest", True, "behaves_differently", f"{plan.test}: {call}")]
    tb, tp = (base.answers[0], patched.answers[0]) if base.answers and patched.answers else (None, None)
    if patched.passed and tb is not None and tp is not None and tp.same_crash(tb):
        return [Evidence("held_out", "tells_apart", "asked at the test's own call, the tested call still crashes as "
                         "on the base while the test's own call passes: the code answers the judge otherwise than "
                         "the test", True, "behaves_differently", f"{call} still {tp.said()}")]
    return []


def _moved(base: Path, patched: Path, first: int) -> int:
    """The first line, in the diff's text, of the function whose code starts at `first` in the base's: found by its
    place among the classes and functions of the module (`first` itself where it cannot be)."""
    try:
        where = _defs(ast.parse(base.read_text(encoding="utf-8")))
        now = _defs(ast.parse(patched.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return first
    path = next((p for p, line in where.items() if line == first), None)
    return now.get(path, first) if path is not None else first


def _defs(tree: ast.Module) -> dict[tuple[str, ...], int]:
    """Each function's and class's place (its enclosing names) and first line (a decorator's, as its code has it)."""
    out: dict[tuple[str, ...], int] = {}

    def walk(node: ast.AST, path: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                here = (*path, child.name)
                out.setdefault(here, min([child.lineno, *(d.lineno for d in child.decorator_list)]))
                walk(child, here)
    walk(tree, ())
    return out


def _shown(call: Any) -> str:
    return json.dumps(call)[:300]


def _write(box: Sandbox, files: dict[str, str]) -> None:
    for path, text in files.items():
        box.call(WriteFileRequest(path=path, content=text))
