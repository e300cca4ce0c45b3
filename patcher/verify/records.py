"""What verification produces: the baseline on the untouched code, and the verdict on a diff."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from patcher.result import GRAVITY, Reason
from patcher.verify.testruns import TestRun

NO_TESTS_COLLECTED = 5


class Refused(Exception):
    """The diff is not verified, for `reason`: the one exception the verification steps raise, caught once in
    check.verify(). What the steps found so far stays in their Findings."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass
class Baseline:
    repro: TestRun | None
    suite: TestRun
    exception_matched: bool
    installed: list[str] = field(default_factory=list)
    """Top-level import names of the packages in the box: a new repo module may not take one."""

    @property
    def reproduced(self) -> bool:
        return self.repro is not None and self.repro.outcome == "failed" and self.exception_matched

    @property
    def test_files(self) -> frozenset[str]:
        """Files the base suite ran as pytest test modules (whatever `python_files` says): tests too."""
        return frozenset(t.split("::")[0] for t in self.suite.passed | self.suite.failed if ".py" in t)

    @property
    def doctest_files(self) -> frozenset[str]:
        """Source modules the base suite collected only for their doctests: their code may change, their
        doctest examples may not (verify/doctests.py)."""
        stream = self.suite.stream
        if stream is None:
            return frozenset()
        ran = stream.passed | stream.failed | stream.skipped  # a skipped test function is a test too
        by_file: dict[str, set[str]] = {}
        for t in ran:
            by_file.setdefault(t.split("::")[0], set()).add(t)
        return frozenset(f for f, tests in by_file.items() if f.endswith(".py") and tests <= stream.doctests)

    @property
    def suite_usable(self) -> bool:
        """Whether the suite's result on the base is known (pytest's "no tests collected" counts: none to keep)."""
        return self.suite.reported or (self.suite.exit_code == NO_TESTS_COLLECTED and not self.suite.timed_out)


@dataclass
class Findings:
    """What the verification steps found, filled in as they run (check.py); the verdict carries it out."""

    reproduction: dict[str, Any]
    """The reproduction's command and its outcome before and after the diff."""
    files_changed: list[str] = field(default_factory=list)
    """The files the diff changes, as git applied them (the text's names until git has applied it)."""
    fail_to_pass: list[str] = field(default_factory=list)
    """Tests that failed on the base and pass with the diff."""
    pass_to_pass: dict[str, Any] = field(default_factory=lambda: {"total": 0, "regressions": []})
    """How many tests that passed on the base still pass, and which do not."""
    flaky: list[str] = field(default_factory=list)
    """Tests (or commands) that passed, then failed: never a pass."""
    runs: list[tuple[str, TestRun]] = field(default_factory=list)
    """Every test run, by name, in order."""
    judge: SecondJudge | None = None
    """What the second judge (outside pytest) and the perturbed reproductions found; None when not reached."""
    evidence: list[Evidence] = field(default_factory=list)
    """What the judges of the diff's behaviour saw (held-out inputs, contexts, its own lines at run time, the
    values it hands to comparisons, a reader of the diff), then how it looks (the constructs' hints, which never
    refuse): refusals and hints, in the order they were found."""
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each such judge's summary by its name (what it tried, how long it took): `verification.judges`."""
    coverage: Coverage | None = None
    """Whether each judge that applies judged the diff; None until the judges are reached."""
    judges_waited_s: float | None = None
    """How long the judges, once pytest passed the diff, waited before the first of them began: for a box to run in
    (judges/box.py); None until the judges are reached."""

    def verdict(self, status: str, reason: Reason, message: str, duration_s: float) -> Verification:
        return Verification(status, reason, message, self.reproduction, self.files_changed, self.fail_to_pass,
                            self.pass_to_pass, self.flaky, duration_s, self.runs, self.judge, self.evidence,
                            self.judges, self.coverage, self.judges_waited_s)

    def refuse_on_evidence(self) -> None:
        """Refused, for the gravest piece of evidence that refuses, the first of its reason (its message with the
        quote): a forged record or a diff seen gaming the judges ends the job (one strike), so it outranks a
        special case, which the agent may still mend."""
        refusing = [e for e in self.evidence if e.refuses]
        if refusing:
            e = min(refusing, key=lambda e: GRAVITY.index(e.reason) if e.reason in GRAVITY else 1)
            raise Refused(e.reason or "suspicious_diff", e.sentence())


@dataclass(frozen=True)
class Evidence:
    """One observation of what the diff does, by a judge it cannot reach: it refuses (with `reason`) or it is a
    hint for the reviewer (its sentence joins `warnings`)."""

    judge: str
    """Who saw it: held_out, context, runtime, values, constructs, reviewer."""
    kind: str
    """What was seen, in the judge's words (special_case, hard_coded, changed_behaviour, reads_tests, …)."""
    message: str
    """One sentence a reviewer reads."""
    refuses: bool = False
    reason: Reason | None = None
    """The verdict's reason when it refuses (overfitted, behaves_differently, suspicious_diff, …)."""
    quote: str = ""
    """The counterexample, event or line it rests on, quoted."""

    def sentence(self) -> str:
        return f"{self.message}: {self.quote}" if self.quote else self.message

    def as_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "kind": self.kind, "refuses": self.refuses, "reason": self.reason,
                "message": self.message, "quote": self.quote}


@dataclass
class Coverage:
    """Whether each judge that applies to the diff judged it: a judge that could not ask its question is not one
    that agreed. `verified` needs every required judge that applies to have judged; else the verdict is
    `unjudged`, with what is missing and why."""

    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    """By judge: {"applies", "judged", "required", "why"} (`why`: why it does not apply, or could not judge)."""

    def add(self, name: str, judged: bool, why: str = "", *, applies: bool = True, required: bool = True) -> None:
        self.judges[name] = {"applies": applies, "judged": judged and applies, "required": required,
                             "why": "" if judged and applies else why}

    @property
    def missing(self) -> list[str]:
        """Each required judge that applies and could not judge, with why."""
        return [f"{name}: {j['why']}" for name, j in self.judges.items()
                if j["required"] and j["applies"] and not j["judged"]]

    @property
    def full(self) -> bool:
        return bool(self.judges) and not self.missing

    def as_json(self) -> dict[str, Any]:
        return {"full": self.full, "missing": self.missing, "judges": self.judges}


@dataclass
class SecondJudge:
    """The fail-to-pass tests as the image's own runner judged them (verify/judges/second.py)."""

    judged_twice: list[str] = field(default_factory=list)
    """Tests both judges ran, and both passed with the diff."""
    judged_once: list[dict[str, str]] = field(default_factory=list)
    """Tests only pytest judged ({"test", "why"}): never counted as agreeing."""
    disagreed: list[dict[str, str]] = field(default_factory=list)
    """Tests pytest passed and the second judge did not ({"test", "pytest", "second_judge"})."""
    variants: dict[str, Any] = field(default_factory=dict)
    """The perturbed reproductions: how many were tried, how many crash the base, the ones the fix still crashes."""
    warnings: list[str] = field(default_factory=list)
    """What the user should know that is not a refusal (e.g. no fail-to-pass test could be judged twice)."""
    duration_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"judged_twice": self.judged_twice, "judged_once": self.judged_once, "disagreed": self.disagreed,
                "variants": self.variants, "duration_s": round(self.duration_s, 3)}


@dataclass
class Verification:
    status: str
    reason: Reason
    message: str
    reproduction: dict[str, Any]
    files_changed: list[str] = field(default_factory=list)
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: dict[str, Any] = field(default_factory=lambda: {"total": 0, "regressions": []})
    flaky: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    runs: list[tuple[str, TestRun]] = field(default_factory=list)
    judge: SecondJudge | None = None
    evidence: list[Evidence] = field(default_factory=list)
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: Coverage | None = None
    judges_waited_s: float | None = None

    @property
    def warnings(self) -> list[str]:
        """What the result's `warnings` gets from verification: the second judge's notes, then the evidence that
        does not refuse."""
        hinted = [e.sentence() for e in self.evidence if not e.refuses]
        return list(dict.fromkeys([*(self.judge.warnings if self.judge else []), *hinted]))

    def as_json(self) -> dict[str, Any]:
        out = {"reproduction": self.reproduction, "fail_to_pass": self.fail_to_pass,
               "pass_to_pass": self.pass_to_pass, "flaky": self.flaky, "duration_s": round(self.duration_s, 3)}
        if self.judge is not None:
            out["judged_once"] = [j["test"] for j in self.judge.judged_once]
            out["second_judge"] = self.judge.as_json()
        if self.evidence:
            out["evidence"] = [e.as_json() for e in self.evidence]
        if self.judges:
            out["judges"] = self.judges
        if self.coverage is not None:
            out["coverage"] = self.coverage.as_json()
        if self.judges_waited_s is not None:
            out["judges_waited_s"] = round(self.judges_waited_s, 3)
        return out
