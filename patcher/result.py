"""The job result: the `--json` object of the contract, and the exit code that goes with it.

The diff is carried only when the status is `verified`, or `unjudged` (the tests prove it, a judge could not
judge it: the gate refuses it unless told otherwise); `JobResult.__post_init__` enforces it, so no code path can
hand out a diff the tests did not prove. TABLE is the one table of reasons: status, sentence, gravity, strike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

Reason = Literal[
    "verified",
    # the tests prove the fix and the judges could not judge it (patcher/verify: coverage)
    "unjudged",
    # the diff was checked and refused (patcher/verify)
    "tests_failed", "regression", "not_reproduced", "policy_violation", "report_tampered", "suspicious_diff",
    "behaves_differently", "overfitted",
    # the engine proposed nothing, or stopped
    "no_change", "gave_up", "cut_off", "round_limit", "budget_exceeded", "timeout", "repeated_call",
    # errors (status "error")
    "model_error", "sandbox_error", "bad_input", "setup_failed", "cancelled", "internal_error",
]
"""Every `reason` of the contract; each has its row in TABLE (docs/contract.md's table is checked against it)."""


@dataclass(frozen=True)
class Row:
    """What a reason means: its status, its sentence in the contract, and how verification weighs it."""

    status: str
    meaning: str
    gravity: int | None = None
    """Refusals on the judges' evidence, 0 the gravest: a verdict names the gravest it saw."""
    strike: bool = False
    """The diff tried to game the verification: the job ends at once, the agent is told nothing more."""


TABLE: dict[str, Row] = {
    "verified": Row("verified", "every check of \"verified\" held and every judge that applies judged the diff"),
    "unjudged": Row("unjudged", "the tests prove the fix and no judge refused it, but a judge that applies could "
                    "not judge it (`verification.coverage` says which and why); the gate refuses it by default"),
    "tests_failed": Row("not_verified", "the reproduction does not pass with the diff, every time"),
    "regression": Row("not_verified", "a test that passed on the base fails (or turned flaky) with the diff"),
    "not_reproduced": Row("not_verified", "the reproduction does not fail on the base with the traceback's crash"),
    "policy_violation": Row("not_verified", "the diff changes what it may not (existing tests, conftest, "
                            "configuration, `.git`, modes, …)"),
    "report_tampered": Row("not_verified", "the per-test evidence disagrees with the runner's report or exit code, "
                           "or a judge's record of the diff's side is not the judge's own", gravity=0, strike=True),
    "suspicious_diff": Row("not_verified", "a judge saw the diff's own code do what no fix does (read the tests or "
                           "the judges, write the framework's objects, end the process behind it; degenerate values)",
                           gravity=1, strike=True),
    "behaves_differently": Row("not_verified", "a second judge outside pytest disagreed, or the outcome depends on "
                               "the run's context where the base's does not, or the diff returns nothing where the "
                               "base answered", gravity=2, strike=True),
    "overfitted": Row("not_verified", "the fix does not hold for other inputs that crash the base the same way",
                      gravity=3),
    "no_change": Row("not_verified", "the engine proposed no change"),
    "gave_up": Row("not_verified", "the agent called `give_up` and said why"),
    "cut_off": Row("not_verified", "the model's answer was cut off"),
    "round_limit": Row("not_verified", "`--max-rounds` model calls were used"),
    "budget_exceeded": Row("not_verified", "`--max-cost` was reached"),
    "timeout": Row("not_verified", "`--timeout` passed"),
    "repeated_call": Row("not_verified", "the agent repeated the same call with an unchanged result"),
    "model_error": Row("error", "the model endpoint answered with something unusable"),
    "sandbox_error": Row("error", "the container broke, timed out on the host backstop, or lied"),
    "bad_input": Row("error", "the input was refused (exit 2)"),
    "setup_failed": Row("error", "the dependency setup step failed (exit 3)"),
    "cancelled": Row("not_verified", "the job was cancelled while it ran"),
    "internal_error": Row("error", "something patcher did not expect raised inside it (a bug of patcher's, not of "
                          "the repository): the message names the exception and the trace, whose `internal_error` "
                          "event holds the traceback; no command ever ends in a traceback instead (exit 1)"),
}
REASONS: frozenset[str] = frozenset(get_args(Reason))
EXIT_CODES = {"verified": 0, "unjudged": 4, "not_verified": 1, "error": 1}
"""Exit code by status (an error's exception may name its own: bad input 2, environment unavailable 3)."""
GRAVITY: tuple[str, ...] = tuple(sorted((r for r, row in TABLE.items() if row.gravity is not None),
                                        key=lambda r: TABLE[r].gravity or 0))
"""Evidence reasons, gravest first."""
STRIKES: frozenset[str] = frozenset(r for r, row in TABLE.items() if row.strike)
"""Reasons that end the job at once: the diff tried to game the verification."""
CARRIES_DIFF = ("verified", "unjudged")
"""The statuses whose result carries the diff: proved by the tests (and, for `verified`, judged)."""


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
        if self.status not in CARRIES_DIFF:
            self.diff = None  # fail closed: only a result the tests proved carries a diff
            self.engine = None
        elif not self.diff or self.reason != self.status:
            raise ValueError(f"a {self.status} result needs a diff and the reason {self.status!r}")

    @property
    def diff_sha256(self) -> str | None:
        return hashlib.sha256(self.diff.encode()).hexdigest() if self.diff else None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("exit_code")
        out["diff_sha256"] = self.diff_sha256
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobResult:
        """The result `as_json` gave (as the job store keeps it), checked again as when it was made; what it
        computes (`diff_sha256`) or a service added (`reverified`) is left out, and the exit code is the status's."""
        values = _known(cls, data)
        if isinstance(values.get("agent"), Mapping):
            values["agent"] = AgentSummary(**_known(AgentSummary, values["agent"]))
        result = cls(**values)
        result.exit_code = exit_code_for(result.status)
        return result


def _known(kind: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)} - {"exit_code"}
    return {k: v for k, v in data.items() if k in names}


def exit_code_for(status: str) -> int:
    return EXIT_CODES[status]


def status_for(reason: str) -> str:
    return TABLE[reason].status
