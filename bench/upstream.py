"""Real upstream bug fixes, rebuilt from PyPI sdists at run time (bench/upstream_cases.toml), on real Docker.

Two issues read this bench. The honest corpus (issue 34): each upstream fix is handed to verification
(`verify_patch`, as `patcher verify` and an agent's diff would be) and must come back `verified`; any other
answer on a reached baseline is a false refusal, printed with its reason. The real-projects bench (issue 35):
per case, whether the baseline is usable (the fix's own test fails on the base with the case's exception and the
suite runs), whether the upstream fix verifies, whether the offline engine fixes it (`--offline`) and whether its
diff is the upstream one (same AST), and why each of the others stops, in one line.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.upstream [--only PROJECT] [--case ID] [--real-projects]
        [--offline] [--limit N] [--python-bin 3.9=/usr/bin/python3.9] [--project-fixes]
    .venv/bin/python -m bench.upstream --check [--only PROJECT] [--case ID]   # host only, plain pytest, no Docker

`--check` rebuilds each case and runs the fix's test with plain pytest on the host: it must fail on the base with
the case's exception and pass with the fix (keeps the manifest honest; no Docker). `--project-fixes` also runs
every honest fix the project has (bench/cheats.py: the examples, the bench.injected upstream lines, the test
corpora). Runs against any checkout: from a worktree that has it, or from here on another checkout's code (`bench` is
a namespace package): `cd /tmp && PYTHONPATH=OTHER:THIS OTHER/.venv/bin/python -m bench.upstream …`. A case needing
another Python than the sandbox's (`python` in the manifest) gets it passed through as the job's `python` setting
when the checkout's pipeline has one, and otherwise stops saying so; the traceback a user would paste comes from
`--python-bin`, else from that Python's sandbox image when this machine has built it (`IMAGE-pyX.Y`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.coverage import Covered, covered, line
from bench.judge_cost import _judges_s, _runs_ms
from bench.upstream_build import build
from bench.upstream_cases import Case, load
from bench.upstream_check import HOST_PYTHON, base_traceback, check
from bench.upstream_judge import baseline_reached, offline_matches
from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job, verify_patch
from patcher.result import JobResult

SANDBOX_PYTHON = "3.11"
"""The Python of the sandbox image a checkout without per-repository Pythons runs every job on."""


@dataclass
class Row:
    case: Case
    baseline: bool | None = None
    verified: str = "-"
    """verify_patch's reason for the upstream fix ("verified", or why not)."""
    offline: str = "-"
    same_as_upstream: bool | None = None
    covered: Covered = field(default_factory=Covered)
    cost: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    """Seconds: every pytest run, verify(), verify()'s own pytest runs, the judges, the judges' wait for their box."""
    """Seconds: the pytest runs (baseline and verification), verify() alone, its own pytest runs, the judges."""
    stop: str = ""
    """Why the case stops, in one line (empty when the upstream fix verified and the engine, if run, fixed it)."""
    seconds: float = 0.0
    python: str = "-"
    """The Python the verification ran and why (provenance.python), `X.Y.Z (source)`; with the Pythons left."""
    provenance: bool = False
    """Whether every result of the case carried a provenance."""


def python_setting(case: Case, cfg: SandboxConfig) -> tuple[dict[str, str], SandboxConfig] | None:
    """The keyword (or the sandbox setting) that asks the pipeline for the case's Python; none when the
    sandbox's own fits; None when this checkout's pipeline cannot run another Python."""
    if case.python == SANDBOX_PYTHON or not case.ask_python:
        return {}, cfg
    if "python" in JobSpec.model_fields and "python" in inspect.signature(verify_patch).parameters:
        return {"python": case.python}, cfg
    if "python" in SandboxConfig.model_fields:
        return {}, cfg.model_copy(update={"python": case.python})
    return None


def interpreter(case: Case, given: dict[str, str], image: str) -> str | None:
    """An interpreter for the case's Python (to produce the traceback a user would paste): the host's, one given,
    else the sandbox image of that Python (`IMAGE-pyX.Y`) when this machine has it (`docker:TAG`)."""
    if case.python == HOST_PYTHON or case.python in given:
        return sys.executable if case.python == HOST_PYTHON else given[case.python]
    tag = f"{image}-py{case.python}"
    found = subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0
    return f"docker:{tag}" if found else None


def run_case(case: Case, work: Path, cfg: SandboxConfig, offline: bool, pythons: dict[str, str],
             dump: Path | None = None) -> Row:
    row = Row(case)
    started = time.monotonic()
    setting, host = python_setting(case, cfg), interpreter(case, pythons, cfg.image)
    if setting is None or host is None:
        row.stop = (f"needs Python {case.python}: " + ("this checkout's pipeline has no python setting"
                    if setting is None else f"no interpreter for it: give --python-bin {case.python}=PATH or build "
                    f"{cfg.image}-py{case.python} (patcher image build --python {case.python})"))
        return row
    keyword, cfg = setting
    built = build(case, work)
    traceback = base_traceback(case, built, host)
    common = dict(test_command=case.test_command, suite_command=case.suite, setup=case.setup, **keyword)
    result = verify_patch(str(built.repo), built.diff, traceback=traceback, sandbox=cfg, trace_dir=work / "runs",
                          **common)  # type: ignore[arg-type]
    if dump is not None:  # the whole result, as `patcher verify --json` prints it
        (dump / f"{case.id}.json").write_text(json.dumps(result.as_json(), indent=1, default=str))
    row.baseline = baseline_reached(result)
    row.verified = result.reason
    row.python, row.provenance = ran_on(result), result.provenance is not None
    row.covered = covered(result.status, result.verification, case.exception)
    runs = _runs_ms(Path(result.trace)) if result.trace else {}
    row.cost = (sum(runs.values()) / 1000, float(result.verification.get("duration_s") or 0.0),
                runs.get("verify", 0.0) / 1000, _judges_s(result.verification),
                float(result.verification.get("judges_waited_s") or 0.0))
    if result.reason != "verified":
        row.stop = f"upstream fix {result.reason}: {_one_line(result.message)}"
    if offline and row.baseline:
        job = run_job(JobSpec(repo=str(built.repo), traceback=traceback, engine="offline",
                              trace_dir=work / "runs", sandbox=cfg, **common))  # type: ignore[arg-type]
        row.offline = job.reason
        row.provenance = row.provenance and job.provenance is not None
        row.same_as_upstream = offline_matches(built, job.diff) if job.diff else None
        if not row.stop and job.reason != "verified":
            row.stop = f"offline engine {job.reason}: {_one_line(job.message)}"
        elif not row.stop and not row.same_as_upstream:
            row.stop = "offline engine verified a diff other than upstream's"
    row.seconds = round(time.monotonic() - started, 1)
    return row


def ran_on(result: JobResult) -> str:
    """`X.Y.Z (source)` of the Python a result ran on, and the Pythons left before it (`; left 3.11.2: why`)."""
    python = (result.provenance or {}).get("python") or {}
    if not python:
        return "-"
    left = "".join(f"; left {t.get('version')}: {t.get('left')}" for t in python.get("tried") or [])
    return f"{python.get('version')} ({python.get('source')}){left}"


def _one_line(text: str, width: int = 260) -> str:
    """One line; a long one keeps its end, where a refusal says why (its start often quotes a long command). A
    setup failure says why before the installer's last lines, which are left out."""
    line = " ".join(text.split("; last lines of the installer's output:")[0].split())
    return line if len(line) <= width else f"{line[:80]} … {line[-(width - 83):]}"


def report(rows: list[Row], offline: bool) -> None:
    for project in dict.fromkeys(r.case.project for r in rows):
        print(f"== {project}")
        for r in (r for r in rows if r.case.project == project):
            base = {True: "yes", False: "NO", None: "-"}[r.baseline]
            same = {True: " (== upstream)", False: " (differs)", None: ""}[r.same_as_upstream]
            tail = f"offline {r.offline}{same}  " if offline else ""
            print(f"  {r.case.id:<34} {r.case.kind:<9} py{r.case.python}  baseline {base:<3}  upstream "
                  f"{r.verified:<14} {tail}{r.seconds:>6.0f} s  {r.stop}")
            print(f"  {'':<34} ran on {r.python}{'' if r.provenance else '  NO PROVENANCE'}")
    reached = [r for r in rows if r.baseline]
    refused = [r for r in reached if r.verified != "verified"]
    print(f"cases {len(rows)} over {len({r.case.project for r in rows})} projects; reached a usable baseline "
          f"{len(reached)}; upstream verified {len(reached) - len(refused)}")
    print(f"provenance on the results of {sum(r.provenance for r in rows)} of {len(rows)} cases")
    print(f"false refusals: {len(refused)}/{len(reached)} upstream fixes judged "
          f"({len(rows) - len(reached)} not judged: the baseline was not reached)")
    print(line([r.covered for r in reached]))
    costs = [r.cost for r in reached if r.cost[2]]
    if costs:
        runs, verify_s, own, judges, waited = (sum(c[i] for c in costs) for i in range(5))
        print(f"cost: verify() {verify_s:.0f} s over its own pytest runs {own:.0f} s = {verify_s / own:.2f}x; baseline "
              f"and verify() {runs - own + verify_s:.0f} s over all their pytest runs {runs:.0f} s = "
              f"{(runs - own + verify_s) / runs:.2f}x (the budget: 2x); the judges {judges:.0f} s after pytest, "
              f"waiting {waited:.0f} s before them for a box")
    for reason, count in Counter(r.verified for r in refused).most_common():
        print(f"  {reason}: {count} ({', '.join(r.case.id for r in refused if r.verified == reason)})")
    if offline:
        fixed = [r for r in reached if r.offline == "verified"]
        matching = [r for r in fixed if r.same_as_upstream]
        print(f"offline engine fixed {len(fixed)}/{len(reached)}; its diff == upstream's {len(matching)}")
    for why, count in Counter(r.stop.split(":")[0] for r in rows if r.stop).most_common():
        print(f"  stops: {why}: {count}")


def run_checks(cases: list[Case], pythons: dict[str, str], image: str) -> int:
    bad = 0
    with tempfile.TemporaryDirectory(prefix="bench-upstream-check-") as tmp:
        for n, case in enumerate(cases):
            host = interpreter(case, pythons, image)
            if host is None:
                print(f"skip {case.id}: no Python {case.python} (give --python-bin {case.python}=PATH or build "
                      f"{image}-py{case.python})")
                continue
            checked = check(case, build(case, Path(tmp) / str(n)), host)
            bad += not checked.ok
            print(f"{'ok ' if checked.ok else 'BAD'} {case.id}: {checked.why}", flush=True)
    print(f"checked {len(cases)} cases: {bad} bad")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", help="one project (repeatable)")
    ap.add_argument("--case", action="append", help="one case id (repeatable)")
    ap.add_argument("--real-projects", action="store_true", help="only the cases of the real-projects bench")
    ap.add_argument("--limit", type=int, help="first N cases")
    ap.add_argument("--check", action="store_true", help="host check with plain pytest, no Docker")
    ap.add_argument("--offline", action="store_true", help="also run the offline engine on each case")
    ap.add_argument("--python-bin", action="append", default=[], help="VERSION=PATH of a host interpreter")
    ap.add_argument("--dump", type=Path, help="write each case's verification result (JSON) into this folder")
    ap.add_argument("--project-fixes", action="store_true", help="also every honest fix the project has (bench.cheats)")
    args = ap.parse_args()
    pythons = dict(p.split("=", 1) for p in args.python_bin)
    cases = [c for c in load() if (not args.only or c.project in args.only) and (not args.case or c.id in args.case)
             and (c.real_projects or not args.real_projects)][: args.limit]
    cfg = SandboxConfig(image=os.environ.get("PATCHER_SANDBOX_IMAGE") or "patcher-sandbox:latest", test_timeout_s=300)
    if args.check:
        return run_checks(cases, pythons, cfg.image)
    rows = []
    if args.dump is not None:
        args.dump.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as tmp:
        for n, case in enumerate(cases):
            try:
                rows.append(run_case(case, Path(tmp) / str(n), cfg, args.offline, pythons, args.dump))
            except (OSError, subprocess.SubprocessError, LookupError, StopIteration) as e:  # the case's rebuild
                rows.append(Row(case, stop=f"the bench could not rebuild the case: {type(e).__name__}: {e}"))
            r = rows[-1]
            c = r.covered
            print(f"  {case.id}: baseline {r.baseline} upstream {r.verified} offline {r.offline} "
                  f"{r.seconds} s judged twice {c.judged_twice}/{c.fail_to_pass} held-out {c.inputs} {r.stop}"
                  + (f" [not judged: {'; '.join(c.missing)[:300]}]" if c.missing else ""), flush=True)
        report(rows, args.offline)
        if args.project_fixes:
            from bench.cheats import honest_fixes  # the project's own honest fixes, counted by bench.cheats
            (Path(tmp) / "honest").mkdir()
            honest_fixes(Path(tmp) / "honest", cfg, ["corpus", "examples", "injected"], 3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
