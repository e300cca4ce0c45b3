"""run_job(): intake -> sandbox -> baseline -> agent -> diff -> verify -> result. The only orchestrator."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox.protocol import DEFAULT_ALLOWLIST

from . import offline
from .agent import Agent, AgentResult
from .config import SandboxConfig
from .envs import EnvConfig, ensure_env_image
from .errors import BadInput, PatcherError
from .frames import crash_site, map_frames
from .guards import Limits
from .intake import StagedRepo, stage_repo
from .llm import LLM, ModelConfig, OpenAIModel
from .result import AgentSummary, JobResult, empty_verification, exit_code_for, status_for
from .sandbox import diff_of
from .sandbox.docker import DockerSandbox, docker_client, require_image
from .sandbox.reaper import reap
from .task import reproduction_command, task_text
from .testruns import TestRun
from .trace import Redactor, Trace
from .tracebacks import ParsedTraceback, parse_traceback
from .verify import Baseline, OpenBox, Site, Verification, run_baseline, verify

Progress = Callable[[str], None]
AUTO_LIMIT = 40
AUTO_BUDGET_S = 45.0
"""In auto mode the offline engine gets a small budget before the agent takes over."""


def patcher_home() -> Path:
    return Path(os.environ.get("PATCHER_HOME") or Path.home() / ".patcher")


def model_in_env() -> bool:
    """Whether the environment names a model endpoint (a key, a base URL or a model)."""
    return any(os.environ.get(v) for v in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATCHER_MODEL"))


class JobSpec(BaseModel):
    """One repair job, as the CLI and the API hand it over."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="Local work tree, or a git URL.")
    ref: str | None = Field(None, description="Commit, branch or tag; default: the work tree as it is.")
    traceback: str = Field(description="The crash report text.")
    test_command: str | None = Field(None, description="Command that reproduces the crash (the user's --test).")
    suite_command: str = Field("python -m pytest -q", description="Runs the repo's tests for pass-to-pass.")
    model: ModelConfig | None = Field(None, description="Model settings; None reads the environment when needed.")
    limits: Limits = Field(default_factory=Limits, description="Agent guards.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Container settings.")
    secrets: list[str] = Field(default_factory=list, description="Values to redact from the trace.")
    trace_dir: Path | None = Field(None, description="Where the JSONL trace goes; default PATCHER_HOME/runs.")
    engine: Literal["agent", "offline", "auto"] | None = Field(
        None, description="Who proposes the fix: the model, fix templates, or templates first (default: auto "
        "when a model is configured, else offline).")
    offline_limit: int = Field(200, ge=0, description="Most template candidates the offline engine tries.")
    offline_budget_s: float = Field(120.0, gt=0, description="Seconds the offline engine may spend trying them.")
    setup: str | None = Field(None, description="Command that installs the repo's dependencies (the user's --setup); "
                              "default: read from pyproject.toml, requirements*.txt, setup.cfg/setup.py.")


def run_job(spec: JobSpec, llm: LLM | None = None, progress: Progress = lambda _: None) -> JobResult:
    model = spec.model
    secret_values = [*spec.secrets, *([model.api_key.get_secret_value()] if model and model.api_key else [])]
    trace = _open_trace(spec.trace_dir, "", Redactor(secret_values))
    trace.emit("run_start", repo=spec.repo, ref=spec.ref, test_command=spec.test_command,
               suite_command=spec.suite_command, traceback=spec.traceback, engine=spec.engine, setup=spec.setup,
               limits=spec.limits.model_dump())
    return _guarded(trace, lambda held: _fix(spec, llm, trace, progress, held))


def _fix(spec: JobSpec, llm: LLM | None, trace: Trace, progress: Progress, held: list[StagedRepo]) -> JobResult:
    model = spec.model
    progress("reading the traceback and the repository")
    parsed = parse_traceback(spec.traceback)
    staged = _stage(held, spec.repo, spec.ref)
    job = _prepare(staged, parsed, spec.test_command, spec.sandbox, spec.suite_command, trace, progress,
                   spec.setup)
    if isinstance(job, JobResult):
        return job
    engine = spec.engine or ("auto" if model or llm or model_in_env() else "offline")
    tried = 0
    if engine != "agent":
        found = _offline(spec, job, staged, trace, progress, engine)
        if isinstance(found, JobResult):
            return found
        tried = found
    llm = llm or OpenAIModel(model or ModelConfig.from_env())
    progress("agent at work in the sandbox")
    with job.open_box(staged) as box:
        agent = Agent(llm, box, trace, spec.limits, _allowlist(spec.sandbox))
        outcome = agent.run(task_text(job.parsed, spec.traceback, staged.path, job.repro))
        diff = diff_of(box)
    summary = _summary(outcome, tried)
    if outcome.reason == "gave_up":  # the agent's own answer: nothing it changed is verified or handed out
        return _finish(trace, staged, "gave_up", outcome.message, files_changed=[], agent=summary)
    if not diff.strip():
        reason = "no_change" if outcome.reason == "finished" else outcome.reason
        return _finish(trace, staged, reason, f"no change was made ({outcome.message})", agent=summary)
    progress("verifying the diff in fresh containers")
    ver = _verify(job, staged, diff, trace)
    reason = ver.reason if ver.status == "verified" or outcome.reason == "finished" else outcome.reason
    message = ver.message if reason == ver.reason else f"{outcome.message}; {ver.message}"
    return _finish(trace, staged, reason, message, diff=diff, files_changed=ver.files_changed,
                   verification=ver.as_json(), agent=summary)


def verify_patch(repo: str, diff: str, ref: str | None = None, test_command: str | None = None,
                 traceback: str | None = None, sandbox: SandboxConfig | None = None,
                 suite_command: str = "python -m pytest -q", trace_dir: Path | None = None,
                 progress: Progress = lambda _: None) -> JobResult:
    """`patcher verify`: the same baseline and verification as a job, on a diff from elsewhere."""
    trace = _open_trace(trace_dir, "verify-")
    trace.emit("run_start", repo=repo, ref=ref, test_command=test_command, mode="verify")

    def check(held: list[StagedRepo]) -> JobResult:
        parsed = parse_traceback(traceback) if traceback else None
        if not diff.strip():
            raise BadInput("the patch is empty")
        if parsed is None and not test_command:
            raise BadInput("say how the crash reproduces: --test CMD, or --traceback FILE naming a failing test")
        staged = _stage(held, repo, ref)
        job = _prepare(staged, parsed, test_command, sandbox or SandboxConfig(), suite_command, trace, progress)
        if isinstance(job, JobResult):
            return job
        progress("verifying the diff in a fresh container")
        ver = _verify(job, staged, diff, trace)
        return _finish(trace, staged, ver.reason, ver.message, diff=diff, files_changed=ver.files_changed,
                       verification=ver.as_json())

    return _guarded(trace, check)


def _guarded(trace: Trace, body: Callable[[list[StagedRepo]], JobResult]) -> JobResult:
    """Runs a job body: a PatcherError becomes the result; the staging copy and the trace always close."""
    held: list[StagedRepo] = []
    try:
        return body(held)
    except PatcherError as e:
        return _finish(trace, held[0] if held else None, e.reason, str(e), exit_code=e.exit_code)
    finally:
        for staged in held:
            staged.cleanup()
        trace.close()


def _stage(held: list[StagedRepo], repo: str, ref: str | None) -> StagedRepo:
    staged = stage_repo(repo, ref)
    held.append(staged)
    return staged


@dataclass
class _Job:
    parsed: ParsedTraceback | None
    repro: str | None
    exc_type: str | None
    open_box: OpenBox
    suite_command: str
    base: Baseline
    site: Site | None = None


def _prepare(staged: StagedRepo, parsed: ParsedTraceback | None, test_command: str | None, cfg: SandboxConfig,
             suite_command: str, trace: Trace, progress: Progress, setup: str | None = None) -> _Job | JobResult:
    """Frames mapped, reproduction chosen, Docker and the environment image ready, baseline run; a JobResult
    when the job ends here."""
    if parsed is not None:
        parsed = map_frames(parsed, staged.files)
    repro = reproduction_command(parsed, test_command, staged.files) if parsed else test_command
    exc_type = parsed.exception.type if parsed and parsed.exception else None
    site = crash_site(parsed) if parsed else None
    client = docker_client()
    reap(client)
    require_image(client, cfg.image)
    progress("preparing the environment image (dependencies)")
    image = ensure_env_image(staged, setup, EnvConfig(base_image=cfg.image), client, progress)
    if image != cfg.image:
        trace.emit("environment", image=image, base_image=cfg.image)
        cfg = cfg.model_copy(update={"image": image})

    def open_box(tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, cfg, client)

    progress("reproducing the crash on the base code" if repro else "running the tests on the base code")
    base = run_baseline(staged, repro, exc_type, open_box, suite_command, site)
    _emit_runs(trace, "baseline", [("base-repro", base.repro)] if base.repro else [])
    _emit_runs(trace, "baseline", [("base-suite", base.suite)])
    before = base.repro.outcome if base.repro else "not_run"
    if repro and not base.reproduced:
        return _finish(trace, staged, "not_reproduced", _why_not_reproduced(base, repro, exc_type),
                       verification=empty_verification(repro, before))
    if not base.suite_usable:
        return _finish(trace, staged, "tests_failed", f"the test suite `{suite_command}` gave no usable result on "
                       "the base code, so no fix could be checked for regressions; pass a suite that runs",
                       verification=empty_verification(repro, before))
    return _Job(parsed, repro, exc_type, open_box, suite_command, base, site)


def _verify(job: _Job, staged: StagedRepo, diff: str, trace: Trace) -> Verification:
    ver = verify(staged, diff, job.base, job.repro, job.exc_type, job.open_box, job.suite_command, job.site)
    _emit_runs(trace, "verify", ver.runs)
    trace.emit("verify", phase="final", command=ver.reproduction.get("command"), outcome=ver.status,
               reason=ver.reason, duration_ms=round(ver.duration_s * 1000, 1))
    return ver


def _emit_runs(trace: Trace, phase: str, runs: list[tuple[str, TestRun]]) -> None:
    for name, run in runs:
        trace.emit("verify", phase=phase, step=name, command=run.command, outcome=run.outcome,
                   exit_code=run.exit_code, passed=len(run.passed), failed=sorted(run.failed)[:20],
                   duration_ms=round(run.duration_ms, 1))


def _open_trace(trace_dir: Path | None, kind: str, redactor: Redactor | None = None) -> Trace:
    run_id = time.strftime(f"%Y%m%d-%H%M%S-{kind}") + secrets.token_hex(3)
    return Trace((trace_dir or patcher_home() / "runs") / f"{run_id}.jsonl", run_id, redactor or Redactor([]))


def _why_not_reproduced(base: Baseline, repro: str, exc_type: str | None) -> str:
    if base.repro is None or base.repro.outcome != "failed":
        outcome = base.repro.outcome if base.repro else "not_run"
        return f"`{repro}` did not fail on the base code (outcome: {outcome}); the crash does not reproduce"
    return (f"`{repro}` failed on the base code, but not with {exc_type} raised through the crash site; "
            "the crash does not reproduce")


def _offline(spec: JobSpec, job: _Job, staged: StagedRepo, trace: Trace, progress: Progress, engine: str
             ) -> JobResult | int:
    """The offline engine's ending, or (auto mode, nothing verified) how many candidates it tried."""
    if job.parsed is None or job.repro is None or job.base.repro is None:
        if engine == "auto":
            return 0
        return _finish(trace, staged, "not_reproduced", "the offline engine needs a reproduction: pass --test CMD "
                       "(or a pytest traceback naming the failing test)", agent=AgentSummary(engine="offline"))
    small = engine == "auto"
    limit = min(spec.offline_limit, AUTO_LIMIT) if small else spec.offline_limit
    budget_s = min(spec.offline_budget_s, AUTO_BUDGET_S) if small else spec.offline_budget_s
    progress("offline engine: trying fix templates against the reproduction")
    with job.open_box(staged) as box:
        found = offline.search(box, job.parsed, staged.path, job.repro, job.base.repro, job.suite_command,
                               job.base.suite, limit=limit, budget_s=budget_s)
    trace.emit("offline", tried=found.tried, generated=found.generated, stopped=found.stopped,
               seconds=round(found.seconds, 3), template=found.candidate.template if found.candidate else None)
    summary = AgentSummary(stop=found.stopped, engine="offline", candidates_tried=found.tried)
    if found.diff:
        progress("verifying the diff in fresh containers")
        ver = _verify(job, staged, found.diff, trace)
        if ver.status == "verified" or not small:
            return _finish(trace, staged, ver.reason, f"{found.summary()}; {ver.message}", diff=found.diff,
                           files_changed=ver.files_changed, verification=ver.as_json(), agent=summary)
    elif not small:
        return _finish(trace, staged, "no_change", found.summary(), agent=summary)
    return found.tried


def _allowlist(cfg: SandboxConfig) -> tuple[tuple[str, ...], ...]:
    return DEFAULT_ALLOWLIST + tuple(tuple(p) for p in cfg.allowlist)


def _summary(outcome: AgentResult, offline_tried: int) -> AgentSummary:
    return AgentSummary(rounds=outcome.rounds, tool_calls=outcome.tool_calls, stop=outcome.reason,
                        tokens={"input": outcome.tokens_in, "output": outcome.tokens_out}, cost_usd=outcome.cost_usd,
                        engine="auto" if offline_tried else "agent", candidates_tried=offline_tried)


def _finish(trace: Trace, staged: StagedRepo | None, reason: str, message: str,
            exit_code: int | None = None, **fields: object) -> JobResult:
    status = status_for(reason)
    result = JobResult(run_id=trace.run_id, status=status, reason=reason, message=message,
                       base_commit=staged.source_commit if staged else None, trace=str(trace.path),
                       exit_code=exit_code if exit_code is not None else exit_code_for(status), **fields)  # type: ignore[arg-type]
    trace.emit("run_end", status=result.status, reason=result.reason, message=message,
               diff_sha256=result.diff_sha256)
    return result
