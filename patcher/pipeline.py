"""run_job(): intake -> prepare (environment, baseline) -> engine (propose, verify) -> result. The only orchestrator."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from traceback import format_exc
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from patcher.agent import Limits
from patcher.config import SandboxConfig
from patcher.engines import (
    AgentEngine,
    AutoEngine,
    Engine,
    TemplateEngine,
)
from patcher.errors import BadInput, Cancelled, InternalError, PatcherError
from patcher.intake import PYTHON_PATTERN, CloneLimits, StagedRepo, parse_traceback, stage_repo
from patcher.model import LLM, ModelConfig, price
from patcher.prepare import (
    EngineContext,
    Known,
    Progress,
    Releasable,
    finish,
    open_trace,
    prepare,
    provenance,
    settings_for,
    verify_job,
)
from patcher.result import JobResult
from patcher.stopper import Stopper
from patcher.trace import Redactor, Trace


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
    suite_command: str | None = Field(None, description="Runs the repo's tests for pass-to-pass (the user's "
                                      "--suite); default: [tool.patcher] suite, else `python -m pytest -q`.")
    model: ModelConfig | None = Field(None, description="Model settings; None reads the environment when needed.")
    limits: Limits = Field(default_factory=Limits, description="Agent guards.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Container settings.")
    secrets: list[str] = Field(default_factory=list, description="Values to redact from the trace.")
    trace_dir: Path | None = Field(None, description="Where the JSONL trace goes; default PATCHER_HOME/runs.")
    engine: Literal["agent", "offline", "auto"] | None = Field(
        None, description="Who proposes the fix: the model, fix templates, or templates first (default: auto "
        "when a model is configured, else offline).")
    attempts: int = Field(3, ge=1, le=10, description="Verifications the agent's diff may get; each rejected one "
                          "is explained to the agent, which may go on within its limits (the user's --attempts).")
    offline_limit: int = Field(200, ge=0, description="Most template candidates the offline engine tries.")
    offline_budget_s: float = Field(120.0, gt=0, description="Seconds the offline engine may spend trying them.")
    setup: str | None = Field(None, description="Command that installs the repo's dependencies (the user's --setup); "
                              "default: read from pyproject.toml, requirements*.txt, setup.cfg/setup.py.")
    clone: CloneLimits = Field(default_factory=CloneLimits, description="Time and size bounds of cloning a URL.")
    python: str | None = Field(None, pattern=PYTHON_PATTERN, description="Python (X.Y) the boxes run (the user's "
                               "--python); default: [tool.patcher] python, else chosen from what the repo declares.")
    review: bool = Field(True, description="In agent and auto modes, the job's model reads a verified diff in a "
                         "fresh context (a hint in `warnings`, `verification.judges.reviewer`); replay sets it as "
                         "the recorded run had it.")


def run_job(spec: JobSpec, llm: LLM | None = None, progress: Progress = lambda _: None,
            cancel: threading.Event | None = None,
            on_event: Callable[[dict[str, Any]], None] | None = None) -> JobResult:
    """The whole job. Raising `cancel` stops it within moments (boxes killed, model call abandoned, reason
    cancelled); `on_event` also gets every trace event (the server's shared event log)."""
    model = spec.model
    secret_values = [*spec.secrets, *([model.api_key.get_secret_value()] if model and model.api_key else []),
                     *spec.clone.access.secrets()]
    trace = open_trace(spec.trace_dir, "", Redactor(secret_values), on_event)
    trace.emit("run_start", repo=spec.repo, ref=spec.ref, test_command=spec.test_command,
               suite_command=spec.suite_command, traceback=spec.traceback, engine=spec.engine, setup=spec.setup,
               python=spec.python, attempts=spec.attempts,
               limits=spec.limits.model_dump())
    ctx = EngineContext(trace, progress, Stopper(cancel), Known(spec.repo, spec.ref))
    return _guarded(trace, lambda held: _fix(spec, llm, ctx, held), ctx)


def _fix(spec: JobSpec, llm: LLM | None, ctx: EngineContext, held: Releasable) -> JobResult:
    trace = ctx.trace
    engine = _engine(spec, llm)
    ctx.progress("reading the traceback and the repository")
    parsed = parse_traceback(spec.traceback)
    staged = _stage(held, spec.repo, spec.ref, spec.clone)
    ctx.stopper.check()
    settings = settings_for(trace, staged, spec.test_command, spec.suite_command, spec.setup, spec.sandbox, spec.python)
    job = prepare(staged, parsed, spec.traceback, settings, ctx, held)
    if isinstance(job, JobResult):
        return job
    p = engine.propose(job, ctx)
    engine.review(job, ctx, p)
    trace.emit("engines", engine=p.engine, engines=p.spend)
    proved = provenance(job, ctx.known, settings.test_command, p.verification, p.diff) if p.verification else \
        ctx.known.provenance(staged)
    return finish(trace, staged, p.reason, p.message, diff=p.diff or None, agent=p.summary, attempts=p.attempts,
                  engine=p.engine, engines=p.spend,
                  files_changed=p.verification.files_changed if p.verification else [],
                  warnings=list(dict.fromkeys([*p.warnings, *(p.verification.warnings if p.verification else [])])),
                  verification=p.verification.as_json() if p.verification else None,
                  known=ctx.known, provenance=proved)


def _engine(spec: JobSpec, llm: LLM | None) -> Engine:
    """The engine asked for; by default auto when a model is configured, else templates only."""
    name = spec.engine or ("auto" if spec.model or llm or model_in_env() else "offline")
    templates = TemplateEngine(spec.offline_limit, spec.offline_budget_s)
    if name == "offline":
        return templates
    model = None if llm else spec.model or ModelConfig.from_env()  # a bad setting fails here, before any work
    if model is not None and spec.limits.max_cost_usd is not None:
        _check_priced(model)
    agent = AgentEngine(spec.limits, spec.attempts, llm, model, spec.review)
    if name == "agent":
        return agent
    return AutoEngine.sized(spec.offline_limit, spec.offline_budget_s, agent)


def verify_patch(repo: str, diff: str, *, ref: str | None = None, test_command: str | None = None,
                 traceback: str | None = None, sandbox: SandboxConfig | None = None,
                 suite_command: str | None = None, trace_dir: Path | None = None,
                 progress: Progress = lambda _: None, setup: str | None = None, clone: CloneLimits | None = None,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 cancel: threading.Event | None = None, python: str | None = None) -> JobResult:
    """`patcher verify` (and a server's re-verification on a new base): the same baseline and verification
    as a job, on a diff from elsewhere; no engine runs."""
    clone = clone or CloneLimits()
    trace = open_trace(trace_dir, "verify-", Redactor(clone.access.secrets()), on_event)
    trace.emit("run_start", repo=repo, ref=ref, test_command=test_command, setup=setup, python=python, mode="verify")
    ctx = EngineContext(trace, progress, Stopper(cancel), Known(repo, ref))

    def check(held: Releasable) -> JobResult:
        parsed = parse_traceback(traceback) if traceback else None
        if not diff.strip():
            raise BadInput("the patch is empty")
        staged = _stage(held, repo, ref, clone)
        settings = settings_for(trace, staged, test_command, suite_command, setup, sandbox or SandboxConfig(), python)
        if parsed is None and not settings.test_command:
            raise BadInput("say how the crash reproduces: --test CMD, [tool.patcher] test in pyproject.toml, or "
                           "--traceback FILE naming a failing test")
        job = prepare(staged, parsed, traceback or "", settings, ctx, held)
        if isinstance(job, JobResult):
            return job
        ctx.stopper.check()
        progress("verifying the diff in a fresh container")
        ver = verify_job(job, diff, trace)
        return finish(trace, staged, ver.reason, ver.message, diff=diff, files_changed=ver.files_changed,
                      verification=ver.as_json(), warnings=ver.warnings, known=ctx.known,
                      provenance=provenance(job, ctx.known, settings.test_command, ver, diff))

    return _guarded(trace, check, ctx)


def _guarded(trace: Trace, body: Callable[[Releasable], JobResult], ctx: EngineContext) -> JobResult:
    """Runs a job body: a PatcherError becomes the result (any error after a cancel is the cancel's: it
    killed the boxes), and so does anything else raised inside patcher (`internal_error`, its traceback in the
    trace's `internal_error` event); the result carries what the job established (`Known`); the staging copy,
    spare boxes and trace always close."""
    held: Releasable = []
    stopper = ctx.stopper
    try:
        try:
            return body(held)
        except PatcherError:
            raise
        except Exception as e:  # a bug of patcher's: a result with its trace, never a traceback out of a command
            trace.emit("internal_error", error=type(e).__name__, message=str(e)[:2000],
                       traceback=format_exc()[-20000:])
            raise InternalError(f"patcher failed inside ({type(e).__name__}: {' '.join(str(e).split())[:300]}); "
                                f"this is a bug of patcher's, not of the repository: the trace {trace.run_id} "
                                "holds its traceback (`patcher trace`)") from e
    except PatcherError as e:
        staged = held[0] if held and isinstance(held[0], StagedRepo) else None
        error = Cancelled("cancelled while it ran; its containers were stopped") if stopper.cancelled else e
        return finish(trace, staged, error.reason, str(error), exit_code=error.exit_code, known=ctx.known)
    finally:
        stopper.close()
        for thing in reversed(held):
            if isinstance(thing, StagedRepo):
                thing.cleanup()
            else:
                thing.close()
        trace.close()


def _check_priced(model: ModelConfig) -> None:
    """A cost limit is only a limit when the spend can be counted: refused at start for a model with no price."""
    if price(model.prices, [model.model], 1_000_000, 1_000_000) is None:
        raise BadInput(f"--max-cost cannot be enforced: patcher knows no price for the model {model.model!r}; "
                       "drop the cost limit, or give the model's price (ModelConfig.prices)")


def _stage(held: Releasable, repo: str, ref: str | None, clone: CloneLimits | None = None) -> StagedRepo:
    staged = stage_repo(repo, ref, clone)
    held.append(staged)
    return staged
