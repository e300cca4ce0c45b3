"""run_job(): intake -> sandbox -> baseline -> agent -> diff -> verify -> result. The only orchestrator."""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import docker
from pydantic import BaseModel, ConfigDict, Field

from sandbox.protocol import DEFAULT_ALLOWLIST

from . import localize, offline
from .agent import Agent, AgentResult
from .clone import CloneLimits
from .config import SandboxConfig
from .envs import EnvConfig, ensure_env_image
from .errors import BadInput, Cancelled, PatcherError
from .feedback import attempt_record, verdict_note
from .frames import crash_site, map_frames
from .guards import Limits
from .intake import StagedRepo, stage_repo
from .llm import LLM, ModelConfig, OpenAIModel, price
from .provenance import base_provenance, with_result
from .repair.suppress import diff_warnings
from .repoconfig import Effective, effective
from .result import AgentSummary, JobResult, empty_verification, exit_code_for, status_for
from .sandbox import Sandbox, diff_of
from .sandbox.docker import DockerSandbox, docker_client, require_image
from .sandbox.pool import BoxPool
from .sandbox.reaper import reap
from .stopper import Stopper
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
    trace = _open_trace(spec.trace_dir, "", Redactor(secret_values), on_event)
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
    settings = _settings(trace, staged, spec.test_command, spec.suite_command, spec.setup, spec.sandbox)
    job = _prepare(staged, parsed, settings.test_command, settings.sandbox, settings.suite_command, trace, progress,
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
        agent = Agent(llm, box, trace, spec.limits, _allowlist(settings.sandbox), stopper=stopper)
        outcome = agent.run(task_text(job.parsed, spec.traceback, staged.path, job.repro, suspects))
        outcome, diff, ver, attempts = _until_verified(agent, outcome, box, job, staged, trace, progress,
                                                       spec.attempts, stopper)
    summary = _summary(outcome, tried)
    if outcome.reason == "gave_up":  # the agent's own answer: nothing it changed is verified or handed out
        return _finish(trace, staged, "gave_up", outcome.message, files_changed=[], agent=summary,
                       attempts=attempts)
    if ver is None:
        reason = "no_change" if outcome.reason == "finished" else outcome.reason
        return _finish(trace, staged, reason, f"no change was made ({outcome.message})", agent=summary,
                       attempts=attempts)
    reason = ver.reason if ver.status == "verified" or outcome.reason == "finished" else outcome.reason
    message = ver.message if reason == ver.reason else f"{outcome.message}; {ver.message}"
    return _finish(trace, staged, reason, message, diff=diff, files_changed=ver.files_changed,
                   verification=ver.as_json(), agent=summary, attempts=attempts,
                   warnings=diff_warnings(diff, staged.path, job.parsed),
                   provenance=job.provenance(staged, spec.repo, spec.ref, settings.test_command, ver, diff))


def _until_verified(agent: Agent, outcome: AgentResult, box: Sandbox, job: _Job, staged: StagedRepo, trace: Trace,
                    progress: Progress, allowed: int, stopper: Stopper
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
        if ver is not None and attempts[-1]["diff_sha256"] == attempt_record(0, ver, diff)["diff_sha256"]:
            return outcome, diff, ver, attempts
        progress(f"verifying the diff in fresh containers (attempt {len(attempts) + 1})")
        stopper.check()
        ver = _verify(job, staged, diff, trace)
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
    trace = _open_trace(trace_dir, "verify-")
    trace.emit("run_start", repo=repo, ref=ref, test_command=test_command, mode="verify")

    def check(held: Held) -> JobResult:
        parsed = parse_traceback(traceback) if traceback else None
        if not diff.strip():
            raise BadInput("the patch is empty")
        staged = _stage(held, repo, ref)
        settings = _settings(trace, staged, test_command, suite_command, None, sandbox or SandboxConfig())
        if parsed is None and not settings.test_command:
            raise BadInput("say how the crash reproduces: --test CMD, [tool.patcher] test in pyproject.toml, or "
                           "--traceback FILE naming a failing test")
        job = _prepare(staged, parsed, settings.test_command, settings.sandbox, settings.suite_command, trace,
                       progress, held, settings.setup)
        if isinstance(job, JobResult):
            return job
        progress("verifying the diff in a fresh container")
        ver = _verify(job, staged, diff, trace)
        return _finish(trace, staged, ver.reason, ver.message, diff=diff, files_changed=ver.files_changed,
                       verification=ver.as_json(),
                       provenance=job.provenance(staged, repo, ref, settings.test_command, ver, diff))

    return _guarded(trace, check)


Held = list[StagedRepo | BoxPool]
"""What a job must release at its end: the staging copy (always first), the pool of spare boxes."""


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
        return _finish(trace, staged, error.reason, str(error), exit_code=error.exit_code)
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


@dataclass
class _Job:
    parsed: ParsedTraceback | None
    repro: str | None
    exc_type: str | None
    open_box: OpenBox
    suite_command: str
    base: Baseline
    image: str
    """The image the boxes start from (the environment image when one was built)."""
    client: docker.DockerClient
    site: Site | None = None

    def provenance(self, staged: StagedRepo, repo: str, ref: str | None, user_test: str | None,
                   ver: Verification, diff: str) -> dict[str, object]:
        """What the record binds; `result_tree` only for a verified diff (one that applied)."""
        prov = base_provenance(staged, repo, ref, self.repro, user_test, self.suite_command, self.image, self.client)
        return with_result(prov, staged, diff) if ver.status == "verified" else prov


def _prepare(staged: StagedRepo, parsed: ParsedTraceback | None, test_command: str | None, cfg: SandboxConfig,
             suite_command: str, trace: Trace, progress: Progress, held: Held, setup: str | None = None,
             stopper: Stopper | None = None) -> _Job | JobResult:
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
    stopper = stopper or Stopper()
    stopper.check()
    if image != cfg.image:
        trace.emit("environment", image=image, base_image=cfg.image)
        cfg = cfg.model_copy(update={"image": image})

    pool = BoxPool(client)  # the next box starts while this one works: baseline, agent, verification
    held.append(pool)
    pool.warm(cfg)

    def open_box(tree: StagedRepo) -> DockerSandbox:
        stopper.check()
        return stopper.watch(DockerSandbox(tree, cfg, client, pool))

    progress("reproducing the crash on the base code" if repro else "running the tests on the base code")
    base = run_baseline(staged, repro, exc_type, open_box, suite_command, site)
    stopper.check()
    _emit_runs(trace, "baseline", [("base-repro", base.repro)] if base.repro else [])
    _emit_runs(trace, "baseline", [("base-suite", base.suite)])
    before = base.repro.outcome if base.repro else "not_run"
    if repro and not base.reproduced:
        return _finish(trace, staged, "not_reproduced", _why_not_reproduced(base, repro, exc_type),
                       verification=empty_verification(repro, before, suite_command))
    if not base.suite_usable:
        return _finish(trace, staged, "tests_failed", f"the test suite `{suite_command}` gave no usable result on "
                       "the base code, so no fix could be checked for regressions; pass a suite that runs",
                       verification=empty_verification(repro, before, suite_command))
    return _Job(parsed, repro, exc_type, open_box, suite_command, base, cfg.image, client, site)


def _verify(job: _Job, staged: StagedRepo, diff: str, trace: Trace) -> Verification:
    ver = verify(staged, diff, job.base, job.repro, job.exc_type, job.open_box, job.suite_command, job.site)
    ver.pass_to_pass["command"] = job.suite_command
    _emit_runs(trace, "verify", ver.runs)
    trace.emit("verify", phase="final", command=ver.reproduction.get("command"), outcome=ver.status,
               reason=ver.reason, duration_ms=round(ver.duration_s * 1000, 1))
    return ver


def _emit_runs(trace: Trace, phase: str, runs: list[tuple[str, TestRun]]) -> None:
    for name, run in runs:
        trace.emit("verify", phase=phase, step=name, command=run.command, outcome=run.outcome,
                   exit_code=run.exit_code, passed=len(run.passed), failed=sorted(run.failed)[:20],
                   duration_ms=round(run.duration_ms, 1))


def _open_trace(trace_dir: Path | None, kind: str, redactor: Redactor | None = None,
                on_event: Callable[[dict[str, Any]], None] | None = None) -> Trace:
    run_id = time.strftime(f"%Y%m%d-%H%M%S-{kind}") + secrets.token_hex(3)
    return Trace((trace_dir or patcher_home() / "runs") / f"{run_id}.jsonl", run_id, redactor or Redactor([]),
                 on_event)


def _why_not_reproduced(base: Baseline, repro: str, exc_type: str | None) -> str:
    if base.repro is None or base.repro.outcome != "failed":
        outcome = base.repro.outcome if base.repro else "not_run"
        return f"`{repro}` did not fail on the base code (outcome: {outcome}); the crash does not reproduce"
    return (f"`{repro}` failed on the base code, but not with {exc_type} raised through the crash site; "
            "the crash does not reproduce")


def _offline(spec: JobSpec, job: _Job, staged: StagedRepo, trace: Trace, progress: Progress, engine: str
             ) -> JobResult | offline.OfflineResult | None:
    """The offline engine's ending, or (auto mode, nothing verified) how its search went."""
    if job.parsed is None or job.repro is None or job.base.repro is None:
        if engine == "auto":
            return None
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
    summary = AgentSummary(stop=found.stopped, engine="offline", candidates_tried=found.tried, search=found.search())
    if found.diff:
        progress("verifying the diff in fresh containers")
        ver = _verify(job, staged, found.diff, trace)
        if ver.status == "verified" or not small:
            return _finish(trace, staged, ver.reason, f"{found.summary()}; {ver.message}", diff=found.diff,
                           files_changed=ver.files_changed, verification=ver.as_json(), agent=summary,
                           provenance=job.provenance(staged, spec.repo, spec.ref, spec.test_command, ver,
                                                     found.diff))
    elif not small:
        return _finish(trace, staged, "no_change", found.summary(), agent=summary)
    return found


def _localize(job: _Job, staged: StagedRepo) -> list[localize.Suspect]:
    """The coverage ranking for the agent's task text (the offline engine measures its own), in a box of
    its own: files the suite writes must not end up in the agent's diff."""
    if job.repro is None or job.base.repro is None:
        return []
    deadline = max(30.0, 10 * job.base.suite.duration_ms / 1000)
    with job.open_box(staged) as box:
        return localize.measure(box, job.suite_command, deadline, job.base.repro.failed)


def _settings(trace: Trace, staged: StagedRepo, test: str | None, suite: str | None, setup: str | None,
              sandbox: SandboxConfig) -> Effective:
    """Flags over `[tool.patcher]` of the base tree over defaults; the trace says which came from where."""
    settings = effective(staged.path, test, suite, setup, sandbox)
    trace.emit("settings", test_command=settings.test_command, suite_command=settings.suite_command,
               setup=settings.setup, allowlist=settings.sandbox.allowlist, sources=settings.sources)
    return settings


def _allowlist(cfg: SandboxConfig) -> tuple[tuple[str, ...], ...]:
    return DEFAULT_ALLOWLIST + tuple(tuple(p) for p in cfg.allowlist)


def _summary(outcome: AgentResult, prior: offline.OfflineResult | None) -> AgentSummary:
    tried = prior.tried if prior else 0
    return AgentSummary(rounds=outcome.rounds, tool_calls=outcome.tool_calls, stop=outcome.reason,
                        tokens={"input": outcome.tokens_in, "output": outcome.tokens_out}, cost_usd=outcome.cost_usd,
                        engine="auto" if tried else "agent", candidates_tried=tried,
                        search=prior.search() if prior else None)


def _finish(trace: Trace, staged: StagedRepo | None, reason: str, message: str,
            exit_code: int | None = None, **fields: object) -> JobResult:
    status = status_for(reason)
    message = trace.redact.text(message)  # errors may quote a URL with credentials, or a secret
    result = JobResult(run_id=trace.run_id, status=status, reason=reason, message=message,
                       base_commit=staged.source_commit if staged else None, trace=str(trace.path),
                       exit_code=exit_code if exit_code is not None else exit_code_for(status), **fields)  # type: ignore[arg-type]
    trace.emit("run_end", status=result.status, reason=result.reason, message=message,
               diff_sha256=result.diff_sha256)
    return result
