"""The job result: the `--json` object of the contract, and the exit code that goes with it.

The diff is carried only when the status is `verified`; `JobResult.__post_init__` enforces it, so no
code path can hand out an unverified diff.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

Reason = Literal[
    "verified",
    # the diff was checked and refused (patcher/verify)
    "tests_failed", "regression", "not_reproduced", "policy_violation", "report_tampered", "suspicious_diff",
    "behaves_differently", "overfitted",
    # the engine proposed nothing, or stopped
    "no_change", "gave_up", "cut_off", "round_limit", "budget_exceeded", "timeout", "repeated_call",
    # errors (status "error")
    "model_error", "sandbox_error", "bad_input", "setup_failed", "cancelled", "internal_error",
]
"""Every `reason` of the contract (README: "The result"); a new one is added here and in README together."""
REASONS: frozenset[str] = frozenset(get_args(Reason))
ERROR_REASONS = {"bad_input", "sandbox_error", "model_error", "setup_failed", "internal_error"}


def as_reason(text: str) -> Reason:
    """`text` as a reason of the contract (an agent's stop reason, say), or ValueError."""
    if text not in REASONS:
        raise ValueError(f"{text!r} is not a reason of the contract")
    return text  # type: ignore[return-value]


def empty_verification(repro_command: str | None = None, before: str = "not_run",
                       suite_command: str | None = None) -> dict[str, Any]:
    return {"reproduction": {"command": repro_command, "before": before, "after": "not_run"},
            "fail_to_pass": [], "pass_to_pass": {"total": 0, "regressions": [], "command": suite_command},
            "flaky": [], "duration_s": 0.0}


@dataclass
class AgentSummary:
    rounds: int = 0
    tool_calls: int = 0
    stop: str = "not_run"
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    cost_usd: float | None = 0.0
    engine: str = "agent"
    """agent, offline, or auto (offline candidates tried first, then the agent)."""
    candidates_tried: int = 0
    """Template candidates the offline engine checked against the reproduction."""
    search: dict[str, Any] | None = None
    """The offline engine's search and its bounds: checks, check_limit, suite_runs, warm_runs, check_seconds,
    seconds, time_budget_s,
    stopped (found | exhausted | candidate_limit | time_budget), generated, refused (suppressing candidates)."""


@dataclass
class JobResult:
    run_id: str
    status: str
    reason: Reason
    message: str
    diff: str | None = None
    base_commit: str | None = None
    files_changed: list[str] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=empty_verification)
    agent: AgentSummary = field(default_factory=AgentSummary)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    """Each verification of an agent's diff: its verdict and the diff's digest (a rejected diff never leaves)."""
    warnings: list[str] = field(default_factory=list)
    """Review hints that do not block (e.g. the diff weakens the check that raised the reported exception)."""
    trace: str | None = None
    engine: str | None = None
    """The engine whose diff is verified: offline or agent (None when nothing is verified)."""
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each engine that ran spent: offline {seconds, checks, stopped}, agent {seconds, rounds}; a side
    stopped because the other verified first also says `stopped` (agent_verified, offline_verified)."""
    provenance: dict[str, Any] | None = None
    """What the result was proved on (patcher/review/provenance.py): repo, source commit, dirty, staged tree and
    the tree with the diff applied, reproduction command and its source, suite, image, patcher version."""
    exit_code: int = 1

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"{self.reason!r} is not a reason of the contract")
        if self.status != "verified":
            self.diff = None  # fail closed: only a verified result carries a diff
            self.engine = None
        elif not self.diff or self.reason != "verified":
            raise ValueError("a verified result needs a diff and the reason 'verified'")

    @property
    def diff_sha256(self) -> str | None:
        return hashlib.sha256(self.diff.encode()).hexdigest() if self.diff else None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("exit_code")
        out["diff_sha256"] = self.diff_sha256
        return out


def exit_code_for(status: str, error_exit: int = 1) -> int:
    return 0 if status == "verified" else error_exit if status == "error" else 1


def status_for(reason: str) -> str:
    if reason == "verified":
        return "verified"
    return "error" if reason in ERROR_REASONS else "not_verified"
