"""The judges of what a diff does, after pytest has passed it: one seam (seam.py), one ordered list (JUDGES).

Each entry names its judge, its check in docs/verified.md, what it rests on, the reasons it may refuse with,
whether `verified` needs it, and where it runs; README's table of judges and docs/verified.md are checked
against the list (tests/test_docs.py). A new judge is one module and one entry here. `run` runs the judges of
one phase in order, each contained (a judge's own failure is evidence of its own kind: it judged nothing), and
`coverage` reads what each judged (records.Coverage). Each judge's summary, with its own time (`duration_s`; the
first judge to read the judges' run pays for it: judges/asked.py), is `verification.judges[name]`.
"""

from __future__ import annotations

import time

from patcher.verify.judges.constructs import constructs
from patcher.verify.judges.context import context
from patcher.verify.judges.heldout import held_out
from patcher.verify.judges.observed import runtime, values
from patcher.verify.judges.perturbed import perturbed
from patcher.verify.judges.seam import Judge, Judged, Judging, Phase
from patcher.verify.judges.second import second
from patcher.verify.records import Coverage, Refused

JUDGES: tuple[Judge, ...] = (
    Judge("context", 10, "the outcome does not change with the run's context (argv, flags, working directory, "
          "path, environment, test framework loaded) where the base's does not", ("behaves_differently",), True,
          "box", context),
    Judge("runtime", 12, "the diff's own lines, watched at run time, do not read the tests or the judges, write "
          "their objects, or end the process behind the framework", ("suspicious_diff",), False, "box", runtime),
    Judge("values", 13, "the values the fixed code hands to the test's comparisons are not degenerate",
          ("suspicious_diff",), False, "box", values),
    Judge("held_out", 11, "inputs drawn after the engine is done, from the crash's own arguments, are answered by "
          "the diff as a fix would, next to the base's answers", ("overfitted", "behaves_differently",
                                                                 "policy_violation", "suspicious_diff",
                                                                 "report_tampered"), True, "box", held_out),
    Judge("second", 9, "the fail-to-pass tests pass again outside pytest, under the image's own runner, where they "
          "fail on the base as under pytest", ("behaves_differently", "report_tampered"), True, "box", second),
    Judge("perturbed", 14, "variants of the test's literal inputs that crash the base do not still crash where the "
          "diff adds the literal it changed", ("overfitted",), False, "box", perturbed),
    Judge("constructs", 16, "how the diff's added lines look (a hint for the reviewer, never a verdict)", (), False,
          "text", constructs),
    Judge("reviewer", 17, "a model reads the diff in a fresh context (a hint, agent and auto modes)", (), False,
          "model"),
)
"""In the order they run. The first to need it makes the judges' run outside pytest (judges/asked.py), in a box of
its own while the held-out judge's calls with the diff run in the judges' box (judges/box.py); among refusals of
equal gravity the first found is the verdict, so what the diff was seen doing comes before the second judge's
disagreement and the perturbed variants."""


def run(phase: Phase, ctx: Judging) -> dict[str, Judged]:
    """The judges of `phase` in order, each one's answer by name; their evidence and summaries join ctx.found."""
    out: dict[str, Judged] = {}
    for judge in JUDGES:
        if judge.phase != phase or judge.run is None:
            continue
        started = time.monotonic()
        try:
            got = judge.run(ctx)
        except Refused:
            raise
        except Exception as e:  # a judge's own fault: it judged nothing, and says so
            got = Judged.failed(e)
        out[judge.name] = got
        ctx.found.evidence += got.evidence
        ctx.found.judges[judge.name] = {**got.summary, "duration_s": round(time.monotonic() - started, 3)}
    return out


def coverage(judged: dict[str, Judged]) -> Coverage:
    """Whether each judge that ran judged; `verified` needs every required one that applies."""
    out = Coverage()
    for judge in JUDGES:
        if judge.name in judged:
            got = judged[judge.name]
            out.add(judge.name, got.judged, got.why, applies=got.applies, required=judge.required)
    return out


__all__ = ["JUDGES", "Judge", "Judged", "Judging", "coverage", "run"]
