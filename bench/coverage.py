"""How much of a verdict the judges judged, per result and per corpus: the figures every bench prints beside its
refusal rates (issue 40).

Per verification: its fail-to-pass tests, how many the second judge judged twice (outside pytest as well),
whether it was a crash case (the traceback's exception, not an assertion's), how many held-out inputs were
compared on both sides, and whether the verdict fell to the lower status (`unjudged`: the tests pass, the judges
could not judge). A corpus sums them: tests judged twice over fail-to-pass tests, crash cases with at least
MIN_INPUTS held-out inputs, verdicts at the lower status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIN_INPUTS = 20
"""Held-out inputs a crash case should have compared (issue 40's target: 90 % of crash cases with at least 20)."""


@dataclass(frozen=True)
class Covered:
    fail_to_pass: int = 0
    judged_twice: int = 0
    crash: bool = False
    inputs: int = 0
    unjudged: bool = False
    """The verdict fell to the lower status: the tests pass, a judge could not judge."""
    reached: bool = False
    """The judges ran at all (the pytest runs passed the fix)."""
    missing: tuple[str, ...] = ()
    """What each required judge that could not judge said (the result's `verification.coverage.missing`); for a
    result without coverage, the held-out judge's note."""
    held_applies: bool = True
    """The held-out judge applies to the diff (not where the base has no answer to compare: the fix adds the keyword
    the test's own call passes)."""


def covered(status: str, verification: dict[str, Any] | None, exc_type: str | None) -> Covered:
    """The figures of one result (`verification`: the result's `verification` object)."""
    ver = verification or {}
    second = ver.get("second_judge") or {}
    held = (ver.get("judges") or {}).get("held_out") or {}
    crash = exc_type is not None and exc_type.rsplit(".", 1)[-1] not in ("AssertionError", "Failed")
    if "coverage" in ver:  # what the verdict says of each required judge (a judged one may still note a side)
        missing = tuple(ver["coverage"].get("missing") or ())
    else:
        missing = (f"held_out: {held['note']}",) if held.get("note") else ()
    applies = ((ver.get("coverage") or {}).get("judges") or {}).get("held_out", {}).get("applies", True)
    return Covered(len(ver.get("fail_to_pass") or []), len(second.get("judged_twice") or []), crash,
                   int(held.get("compared", held.get("inputs")) or 0), status == "unjudged",
                   "second_judge" in ver, missing, bool(applies))


def line(rows: list[Covered], label: str = "coverage") -> str:
    """One line of a corpus's figures: tests judged twice, crash cases with held-out inputs, lower status."""
    reached = [r for r in rows if r.reached]
    tests = sum(r.fail_to_pass for r in reached)
    twice = sum(r.judged_twice for r in reached)
    crashes = [r for r in reached if r.crash]
    held = [r for r in crashes if r.inputs >= MIN_INPUTS]
    applying = [r for r in crashes if r.held_applies]
    where = f", {len(held)}/{len(applying)} where the held-out judge applies" if len(applying) < len(crashes) else ""
    any_inputs = [r for r in reached if r.inputs > 0]
    lower = [r for r in rows if r.unjudged]
    return (f"{label}: judged twice {twice}/{tests} fail-to-pass tests ({_pct(twice, tests)}); crash cases with >= "
            f"{MIN_INPUTS} held-out inputs {len(held)}/{len(crashes)} ({_pct(len(held), len(crashes))}{where}); "
            f"cases with held-out inputs {len(any_inputs)}/{len(reached)} ({sum(r.inputs for r in reached)} inputs); "
            f"verdicts at the lower status (unjudged) {len(lower)}/{len(rows)}; judges reached {len(reached)}")


def _pct(n: int, of: int) -> str:
    return f"{100 * n / of:.0f} %" if of else "-"
