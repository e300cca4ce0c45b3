"""run_job(): intake -> sandbox -> baseline -> agent -> diff -> verify -> result. The only orchestrator."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from patcher.agent import Agent, AgentResult, Limits, attempt_record, diff_digest, task_text, verdict_note
from patcher.config import SandboxConfig
from patcher.errors import BadInput, Cancelled, PatcherError
from patcher.intake import CloneLimits, StagedRepo, parse_traceback, stage_repo
from patcher.model import LLM, ModelConfig, OpenAIModel, price
from patcher.repair import engine as offline
from patcher.repair import localize
from patcher.repair.site import is_test_path
from patcher.repair.suppress import diff_warnings
from patcher.result import AgentSummary, JobResult
from patcher.sandbox import Sandbox, diff_of
from patcher.steps import (
    Held,
    PreparedJob,
    Progress,
    allowlist_of,
    finish,
    open_trace,
    prepare,
    settings_for,
    verify_job,
)
from patcher.stopper import Stopper
from patcher.trace import Redactor, Trace
from patcher.verify import Verification

AUTO_LIMIT = 40
AUTO_BUDGET_S = 45.0
"""In auto mode the offline engine gets a small budget before the agent takes over."""


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


def run_job(spec: JobSpec, llm: LLM | None = None, progress: Progress = lambda _: None,
            cancel: threading.Event | None = None,
            on_event: Callable[[dict[str, Any]], None] | None = None) -> JobResult:
    """The whole job. Raising `cancel` stops it within moments (boxes killed, model call abandoned, reason
    cancelled); `on_event` also gets every trace event (the server's shared event log)."""
    model = spec.model
    secret_values = [*spec.secrets, *([model.api_key.get_secret_value()] if model and model.api_key else [])]
    trace = open_trace(spec.trace_dir, "", Redactor(secret_values), on_event)
    trace.emit("run_start", repo=spec.repo, ref=spec.ref, test_command=spec.test_command,
               suite_command=spec.suite_command, traceback=spec.traceback, engine=spec.engine, setup=spec.setup,
               attempts=spec.attempts,
               limits=spec.limits.model_dump())
    stopper = Stopper(cancel)
    return _guarded(trace, lambda held: _fix(spec, llm, trace, progress, held, stopper), stopper)


def _fix(spec: JobSpec, llm: LLM | None, trace: Trace, progress: Progress, held: Held,
         stopper: Stopper) -> JobResult:
    model = spec.model
    engine = spec.engine or ("auto" if model or llm or model_in_env() else "offline")
    if engine != "offline" and llm is None and spec.limits.max_cost_usd is not None:
        _check_priced(model or ModelConfig.from_env())
    progress("reading the traceback and the repository")
    parsed = parse_traceback(spec.traceback)
    staged = _stage(held, spec.repo, spec.ref, spec.clone)
    stopper.check()
    settings = settings_for(trace, staged, spec.test_command, spec.suite_command, spec.setup, spec.sandbox)
    job = prepare(staged, parsed, settings.test_command, settings.sandbox, settings.suite_command, trace, progress,
                   held, settings.setup, stopper)
    if isinstance(job, JobResult):
        return job
    tried: offline.OfflineResult | None = None
    if engine != "agent":
        found = _offline(spec, job, staged, trace, progress, engine)
        if isinstance(found, JobResult):
            return found
        tried = found
    llm = llm or OpenAIModel(model or ModelConfig.from_env())
    progress("agent at work in the sandbox")
    suspects = tried.suspects if tried else _localize(job, staged)
    stopper.check()
    with job.open_box(staged) as box:
        agent = Agent(llm, box, trace, spec.limits, allowlist_of(settings.sandbox), stopper=stopper)
        outcome = agent.run(task_text(job.parsed, spec.traceback, staged.path, job.repro, suspects))
        outcome, diff, ver, attempts = _until_verified(agent, outcome, box, job, staged, trace, progress,
                                                       spec.attempts, stopper)
    summary = _summary(outcome, tried)
    if outcome.reason == "gave_up":  # the agent's own answer: nothing it changed is verified or handed out
        return finish(trace, staged, "gave_up", outcome.message, files_changed=[], agent=summary,
                       attempts=attempts)
    if ver is None:
        reason = "no_change" if outcome.reason == "finished" else outcome.reason
        return finish(trace, staged, reason, f"no change was made ({outcome.message})", agent=summary,
                       attempts=attempts)
    reason = ver.reason if ver.status == "verified" or outcome.reason == "finished" else outcome.reason
    message = ver.message if reason == ver.reason else f"{outcome.message}; {ver.message}"
    return finish(trace, staged, reason, message, diff=diff, files_changed=ver.files_changed,
                   verification=ver.as_json(), agent=summary, attempts=attempts,
                   warnings=diff_warnings(diff, staged.path, job.parsed),
                   provenance=job.provenance(staged, spec.repo, spec.ref, settings.test_command, ver, diff))


def _until_verified(agent: Agent, outcome: AgentResult, box: Sandbox, job: PreparedJob, staged: StagedRepo,
                    trace: Trace, progress: Progress, allowed: int, stopper: Stopper
                    ) -> tuple[AgentResult, str, Verification | None, list[dict[str, Any]]]:
    """Verify the agent's diff; while rejected (and the agent finished on its own, within `allowed`
    verifications), tell it why and let it go on. A diff unchanged since the last verdict is not re-run."""
    attempts: list[dict[str, Any]] = []
    ver: Verification | None = None
    while True:
        stopper.check()
        diff = "" if stopper.killed(box) else diff_of(box)  # killed: a tool call outlived the wall clock
        if outcome.reason == "gave_up" or not diff.strip():
            return outcome, diff, None, attempts
        if ver is not None and attempts[-1]["diff_sha256"] == diff_digest(diff):
            return outcome, diff, ver, attempts
        progress(f"verifying the diff in fresh containers (attempt {len(attempts) + 1})")
        stopper.check()
        ver = verify_job(job, staged, diff, trace)
        attempts.append(attempt_record(len(attempts) + 1, ver, diff))
        trace.emit("attempt", **attempts[-1])
        if ver.status == "verified" or outcome.reason != "finished" or len(attempts) >= allowed:
            return outcome, diff, ver, attempts
        progress(f"attempt {len(attempts)} rejected ({ver.reason}): the agent hears why")
        outcome = agent.resume(verdict_note(ver, len(attempts), allowed))


def verify_patch(repo: str, diff: str, ref: str | None = None, test_command: str | None = None,
                 traceback: str | None = None, sandbox: SandboxConfig | None = None,
                 suite_command: str | None = None, trace_dir: Path | None = None,
                 progress: Progress = lambda _: None) -> JobResult:
    """`patcher verify`: the same baseline and verification as a job, on a diff from elsewhere."""
    trace = open_trace(trace_dir, "verify-")
    trace.emit("run_start", repo=repo, ref=ref, test_command=test_command, mode="verify")

    def check(held: Held) -> JobResult:
        parsed = parse_traceback(traceback) if traceback else None
        if not diff.strip():
            raise BadInput("the patch is empty")
        staged = _stage(held, repo, ref)
        settings = settings_for(trace, staged, test_command, suite_command, None, sandbox or SandboxConfig())
        if parsed is None and not settings.test_command:
            raise BadInput("say how the crash reproduces: --test CMD, [tool.patcher] test in pyproject.toml, or "
                           "--traceback FILE naming a failing test")
        job = prepare(staged, parsed, settings.test_command, settings.sandbox, settings.suite_command, trace,
                       progress, held, settings.setup)
        if isinstance(job, JobResult):
            return job
        progress("verifying the diff in a fresh container")
        ver = verify_job(job, staged, diff, trace)
        return finish(trace, staged, ver.reason, ver.message, diff=diff, files_changed=ver.files_changed,
                       verification=ver.as_json(),
                       provenance=job.provenance(staged, repo, ref, settings.test_command, ver, diff))

    return _guarded(trace, check)


def _guarded(trace: Trace, body: Callable[[Held], JobResult], stopper: Stopper | None = None) -> JobResult:
    """Runs a job body: a PatcherError becomes the result (any error after a cancel is the cancel's: it
    killed the boxes); the staging copy, spare boxes and trace always close."""
    held: Held = []
    try:
        return body(held)
    except PatcherError as e:
        staged = held[0] if held and isinstance(held[0], StagedRepo) else None
        error = Cancelled("cancelled while it ran; its containers were stopped") \
            if stopper is not None and stopper.cancelled else e
        return finish(trace, staged, error.reason, str(error), exit_code=error.exit_code)
    finally:
        if stopper is not None:
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


def _stage(held: Held, repo: str, ref: str | None, clone: CloneLimits | None = None) -> StagedRepo:
    staged = stage_repo(repo, ref, clone)
    held.append(staged)
    return staged


def _offline(spec: JobSpec, job: PreparedJob, staged: StagedRepo, trace: Trace, progress: Progress, engine: str
             ) -> JobResult | offline.OfflineResult | None:
    """The offline engine's ending, or (auto mode, nothing verified) how its search went."""
    if job.parsed is None or job.repro is None or job.base.repro is None:
        if engine == "auto":
            return None
        return finish(trace, staged, "not_reproduced", "the offline engine needs a reproduction: pass --test CMD "
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
    summary = AgentSummary(stop=found.stopped, engine="offline", candidates_tried=found.tried, search=found.search())
    if found.diff:
        progress("verifying the diff in fresh containers")
        ver = verify_job(job, staged, found.diff, trace)
        if ver.status == "verified" or not small:
            return finish(trace, staged, ver.reason, f"{found.summary()}; {ver.message}", diff=found.diff,
                           files_changed=ver.files_changed, verification=ver.as_json(), agent=summary,
                           provenance=job.provenance(staged, spec.repo, spec.ref, spec.test_command, ver,
                                                     found.diff))
    elif not small:
        return finish(trace, staged, "no_change", found.summary(), agent=summary)
    return found


def _localize(job: PreparedJob, staged: StagedRepo) -> list[localize.Suspect]:
    """The coverage ranking for the agent's task text (the offline engine measures its own), in a box of
    its own: files the suite writes must not end up in the agent's diff. Only when the traceback's innermost
    repository frame is a test (a wrong value, not a crash): otherwise the traceback already points into
    the code, and a suite run under line tracing would cost more than the whole rest of the job."""
    if job.repro is None or job.base.repro is None or (job.site and not is_test_path(job.site[0])):
        return []
    deadline = max(30.0, 10 * job.base.suite.duration_ms / 1000)
    with job.open_box(staged) as box:
        return localize.measure(box, job.suite_command, deadline, job.base.repro.failed)


def _summary(outcome: AgentResult, prior: offline.OfflineResult | None) -> AgentSummary:
    tried = prior.tried if prior else 0
    return AgentSummary(rounds=outcome.rounds, tool_calls=outcome.tool_calls, stop=outcome.reason,
                        tokens={"input": outcome.tokens_in, "output": outcome.tokens_out}, cost_usd=outcome.cost_usd,
                        engine="auto" if tried else "agent", candidates_tried=tried,
                        search=prior.search() if prior else None)


