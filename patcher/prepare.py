"""The steps `pipeline.run_job` strings together: a job prepared (settings, frames, reproduction, Docker,
environment image, spare boxes, baseline), its diffs verified, and its ending written (result + run_end).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from patcher.agent import reproduction_command
from patcher.config import SandboxConfig, patcher_home
from patcher.env import (
    EnvConfig,
    PythonChoice,
    PythonPlan,
    crash_python,
    ensure_env_image,
    import_symptom,
    python_plan,
    setup_of,
)
from patcher.errors import SetupFailed
from patcher.intake import Effective, ParsedTraceback, StagedRepo, crash_site, effective, map_frames
from patcher.result import CARRIES_DIFF, JobResult, Reason, empty_verification, exit_code_for, status_for
from patcher.review import base_provenance, reproduction_of, staged_provenance, with_result
from patcher.sandbox import BoxPool, DockerBoxes, docker_client, reap, require_image
from patcher.stopper import Stopper
from patcher.trace import Redactor, Trace
from patcher.verify import Baseline, Job, TestRun, Verification, not_reproduced, run_baseline, verify, why_not_run

Progress = Callable[[str], None]


@dataclass
class Known:
    """What a job has established so far, for the provenance every result carries whatever its ending (the
    repository, the Pythons tried and the one chosen, the setup, the image, the commands) and the warnings of its
    setup (a tox deps pin the project's requirements overrode)."""

    repo: str
    ref: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def provenance(self, staged: StagedRepo | None = None) -> dict[str, Any]:
        return {**staged_provenance(staged, self.repo, self.ref), **self.fields}


@dataclass(frozen=True)
class EngineContext:
    """What a job's steps and its engine report to and are stopped by: its trace, progress line, stopper, and
    what it has established so far."""

    trace: Trace
    progress: Progress
    stopper: Stopper
    known: Known = field(default_factory=lambda: Known("", None))


Releasable = list[StagedRepo | BoxPool]
JOB_SPARES = 2
"""Boxes of the job's config kept started ahead: the agent's and the verification's are both ready by the
time the baseline ends, even when the agent's edit takes no time."""
"""What a job must release at its end: the staging copy (always first), the pool of spare boxes."""


def provenance(job: Job, known: Known, user_test: str | None, ver: Verification, diff: str) -> dict[str, Any] | None:
    """What the record binds; `result_tree` only for a diff the tests proved (one that applied)."""
    assert job.client is not None
    prov = {**known.provenance(job.staged), **base_provenance(job, known.repo, known.ref, user_test)}
    return with_result(prov, job.staged, diff) if ver.status in CARRIES_DIFF else prov


def prepare(staged: StagedRepo, parsed: ParsedTraceback | None, traceback: str, settings: Effective,
            ctx: EngineContext, held: Releasable) -> Job | JobResult:
    """Frames mapped, reproduction chosen, Docker, the Python and the environment image ready, baseline run; a
    JobResult when the job ends here. A Python that cannot set the project up, or import it, for the
    interpreter's sake is left for the next one (pyversion.fallbacks), each left one noted in `tried`."""
    test_command, cfg = settings.test_command, settings.sandbox
    if parsed is not None:
        parsed = map_frames(parsed, staged.files, staged.path)
    repro = reproduction_command(parsed, test_command, staged.files) if parsed else test_command
    known = ctx.known
    known.fields.update(reproduction=reproduction_of(repro, test_command), suite_command=settings.suite_command)
    client = docker_client()
    reap(client)
    require_image(client, cfg.image)
    asked_by = {"flag": "--python", "pyproject": "[tool.patcher] python"}.get(settings.sources.get("python", ""), "")
    plan = python_plan(client, staged.path, settings.python, asked_by, cfg.image, crash_python(traceback))
    return _on_pythons(plan, client, staged, parsed, traceback, settings, ctx, held, repro)


def _on_pythons(plan: PythonPlan, client: Any, staged: StagedRepo, parsed: ParsedTraceback | None, traceback: str,
                settings: Effective, ctx: EngineContext, held: Releasable, repro: str | None) -> Job | JobResult:
    """The job on the first Python of `plan` that sets the project up and imports it (else the last failure),
    each one left noted in `tried` with why; a left Python's spare boxes are stopped at once."""
    known = ctx.known
    left: list[dict[str, str]] = []
    failed: SetupFailed | Job | None = None
    """The last Python's failure, which stands when no later one can even be built."""
    for n, (version, source) in enumerate(plan.choices):
        last = n == len(plan.choices) - 1
        try:
            python = replace(plan.realize(client, n, ctx.progress), tried=tuple(left))
        except SetupFailed as e:
            if failed is None:
                raise
            left.append({"version": version, "image": "", "source": source, "left": f"no image for it: {e}"})
            continue
        known.fields["python"] = python.as_json()
        try:
            job = _on_python(staged, parsed, traceback, settings, ctx, held, python, repro, client)
        except SetupFailed as e:
            known.fields["setup"] = e.setup
            if last or not e.interpreter:
                raise
            failed = e
            left.append(python.left(f"the setup failed there: {e.interpreter}"))
            ctx.progress(f"Python {python.version} could not set the project up; trying the next one")
            continue
        why = None if last else _interpreter_bound(job)
        if why is None:
            return _unusable(ctx.trace, job, job.base, known) or job
        failed = job
        left.append(python.left(f"the base run failed there for the interpreter: {why}"))
        ctx.progress(f"Python {python.version} could not import the project; trying the next one")
        if isinstance(spares := held[-1], BoxPool):
            held.pop()
            spares.close()
    own = python.left("")  # the last Python that ran: the ones after it had no image
    known.fields["python"] = {**known.fields["python"], "tried": [t for t in left if t["image"] != own["image"]]}
    if isinstance(failed, SetupFailed):
        raise failed
    assert failed is not None, "a Python plan has at least one choice"
    return _unusable(ctx.trace, failed, failed.base, known) or failed


def _on_python(staged: StagedRepo, parsed: ParsedTraceback | None, traceback: str, settings: Effective,
               ctx: EngineContext, held: Releasable, python: PythonChoice, repro: str | None,
               client: Any) -> Job:
    """The environment image on `python`, boxes ready, the baseline run: the job with its baseline."""
    trace, progress, stopper, known = ctx.trace, ctx.progress, ctx.stopper, ctx.known
    progress("preparing the environment image (dependencies)")
    image = ensure_env_image(staged, settings.setup, EnvConfig(base_image=python.image), client, progress)
    stopper.check()
    environment = {"python": python.as_json(), "setup": setup_of(client, image)}
    known.fields.update(environment, image=image)
    known.warnings = list((environment["setup"] or {}).get("warnings") or [])
    trace.emit("environment", image=image, base_image=python.image, **environment)
    cfg = settings.sandbox.model_copy(update={"image": image})
    pool = BoxPool(client)  # the next box starts while this one works: baseline, agent, verification
    held.append(pool)
    pool.warm(cfg, JOB_SPARES)
    progress("reproducing the crash on the base code" if repro else "running the tests on the base code")
    exc_type = parsed.exception.type if parsed and parsed.exception else None
    job = Job(staged, DockerBoxes(cfg, client, pool, stopper), settings.suite_command, repro, exc_type,
              crash_site(parsed) if parsed else None, parsed, traceback, cfg.image, client, environment=environment)
    base = run_baseline(job)
    stopper.check()
    emit_runs(trace, "baseline", [("base-repro", base.repro)] if base.repro else [])
    emit_runs(trace, "baseline", [("base-suite", base.suite)])
    known.fields.update(base_provenance(job, known.repo, known.ref, settings.test_command))
    return job.with_baseline(base)


def _interpreter_bound(job: Job) -> str | None:
    """Why the base run points at the interpreter (a standard-library name it lacks, syntax it does not parse),
    when the baseline is unusable and what failed is not the reported crash itself; else None."""
    base = job.base
    if base.reproduced and base.suite_usable:
        return None
    exc = job.parsed.exception if job.parsed else None
    crash_line = f"{exc.type}: {exc.message}" if exc else None
    runs = [r for r in (base.repro, base.suite) if r is not None]
    return import_symptom("\n".join(r.failure_text or r.output_tail for r in runs), crash_line)


def _unusable(trace: Trace, job: Job, base: Baseline, known: Known) -> JobResult | None:
    """The ending when the baseline leaves nothing to check a fix against; None when it is usable."""
    before = base.repro.outcome if base.repro else "not_run"
    empty = empty_verification(job.repro, before, job.suite_command)
    if job.repro and not base.reproduced:
        message = not_reproduced(base.repro, job.repro, job.exc_type, job.site, job.staged.files)
        return finish(trace, job.staged, "not_reproduced", message, verification=empty, known=known)
    if not base.suite_usable:
        why = why_not_run(base.suite, job.staged.files)
        return finish(trace, job.staged, "tests_failed", f"the test suite `{job.suite_command}` gave no usable "
                      "result on the base code, so no fix could be checked for regressions"
                      + (f": {why}" if why else "; pass a suite that runs"), verification=empty, known=known)
    return None


def verify_job(job: Job, diff: str, trace: Trace) -> Verification:
    ver = verify(job, diff)
    ver.pass_to_pass["command"] = job.suite_command
    emit_runs(trace, "verify", ver.runs)
    for seen in ver.evidence:
        trace.emit("verify", phase="judge", **seen.as_json())
    for name, summary in ver.judges.items():
        trace.emit("verify", phase="judges", judge=name, summary=summary)
    trace.emit("verify", phase="final", command=ver.reproduction.get("command"), outcome=ver.status,
               reason=ver.reason, duration_ms=round(ver.duration_s * 1000, 1))
    return ver


def emit_runs(trace: Trace, phase: str, runs: list[tuple[str, TestRun]]) -> None:
    for name, run in runs:
        shared = {"answered_by": run.answered_by} if run.answered_by else {}
        trace.emit("verify", phase=phase, step=name, command=run.command, outcome=run.outcome,
                   exit_code=run.exit_code, passed=len(run.passed), failed=sorted(run.failed)[:20],
                   duration_ms=round(run.duration_ms, 1), **shared)


def open_trace(trace_dir: Path | None, kind: str, redactor: Redactor | None = None,
                on_event: Callable[[dict[str, Any]], None] | None = None) -> Trace:
    run_id = time.strftime(f"%Y%m%d-%H%M%S-{kind}") + secrets.token_hex(3)
    return Trace((trace_dir or patcher_home() / "runs") / f"{run_id}.jsonl", run_id, redactor or Redactor([]),
                 on_event)


def settings_for(trace: Trace, staged: StagedRepo, test: str | None, suite: str | None, setup: str | None,
              sandbox: SandboxConfig, python: str | None = None) -> Effective:
    """Flags over `[tool.patcher]` of the base tree over defaults; the trace says which came from where."""
    settings = effective(staged.path, test, suite, setup, sandbox, python)
    trace.emit("settings", test_command=settings.test_command, suite_command=settings.suite_command,
               setup=settings.setup, allowlist=settings.sandbox.allowlist, python=settings.python,
               sources=settings.sources)
    return settings


def finish(trace: Trace, staged: StagedRepo | None, reason: Reason, message: str,
           exit_code: int | None = None, known: Known | None = None, **fields: Any) -> JobResult:
    """The result, and the trace's `run_end`. With `known`, the result carries the provenance established so far
    (unless `fields` has its own) and the setup's warnings ahead of its own."""
    status = status_for(reason)
    message = trace.redact.text(message)  # errors may quote a URL with credentials, or a secret
    if known is not None:
        fields.setdefault("provenance", known.provenance(staged))
        fields["warnings"] = list(dict.fromkeys([*known.warnings, *fields.get("warnings", [])]))
    result = JobResult(run_id=trace.run_id, status=status, reason=reason, message=message,
                       base_commit=staged.source_commit if staged else None, trace=str(trace.path),
                       exit_code=exit_code if exit_code is not None else exit_code_for(status), **fields)
    trace.emit("run_end", status=result.status, reason=result.reason, message=message,
               diff_sha256=result.diff_sha256, provenance=result.provenance)
    return result
