"""The second judge: the fail-to-pass tests again, outside pytest, in the judges' run (judges/asked.py).

A test counts as judged twice only where the judge sees it fail on the base as pytest did (the traceback's
exception through the crash site; else the type pytest saw); with the diff it must then pass there, else
`behaves_differently`, both outcomes quoted. A test the judge cannot run, or that does not fail on the base
outside pytest as under it, is judged once: listed, never counted as agreeing. A record of the diff's side that
is not the judge's own is `report_tampered`; the base's side misread is the judge's fault, not the diff's. The
judge applies whenever there are fail-to-pass tests, and judged when one of them was judged twice.
"""

from __future__ import annotations

import shlex
import time

from patcher.verify.judges.asked import CONTEXTS, asked_of, escaped, said
from patcher.verify.judges.seam import Judged, Judging
from patcher.verify.records import Evidence, SecondJudge
from sandbox.commands import runner_of

JUDGE = "second"


def second(ctx: Judging) -> Judged:
    started = time.monotonic()
    asked = asked_of(ctx)
    out = ctx.found.judge = ctx.found.judge or SecondJudge()
    out.judged_once += [{"test": t, "why": "not a test function the second judge can address"}
                        for t in asked.unaddressed]
    base = asked.bases[CONTEXTS[0]]
    for k in asked.tests():
        if k not in asked.judged_in:
            got = base.by_id.get(k, {})
            why = got.get("why") or escaped(got) or base.note or (_UNSET.get(_runner(ctx)) or
                f"outside {_runner(ctx)} it does not fail on the base as under it ({said(got)})")
            out.judged_once.append({"test": asked.cases[k][0], "why": str(why)})
    evidence = [Evidence(JUDGE, "forged", "the second judge's evidence of the diff's side is not the judge's own; "
                         "its results cannot be believed", True, "report_tampered", problem)
                for problem in dict.fromkeys(a.problem for a in asked.afters.values() if a.problem)][:1]
    for k, context in asked.judged_in.items():
        there = asked.afters[context]
        got = there.by_id.get(k, {})
        if got.get("outcome") == "passed":
            out.judged_twice.append(asked.cases[k][0])
        else:
            out.disagreed.append({"test": asked.cases[k][0], "pytest": "passed",
                                  "second_judge": said(got, there.note)})
    if out.disagreed:
        shown = "; ".join(f"{d['test']}: pytest {d['pytest']}, the second judge {d['second_judge']}"
                          for d in out.disagreed[:3])
        evidence.append(Evidence(JUDGE, "disagrees", "the fix behaves differently outside pytest (run directly, "
                                 "from a random path, in an empty directory, with a bare environment)", True,
                                 "behaves_differently", shown))
    if ctx.found.fail_to_pass and not out.judged_twice:
        out.warnings.append(f"no fail-to-pass test could be judged twice (outside {_runner(ctx)} as well): "
                            + "; ".join(f"{j['test']}: {j['why']}" for j in out.judged_once[:3]))
    out.duration_s = time.monotonic() - started
    once = "; ".join(f"{j['test']}: {j['why']}" for j in out.judged_once[:2]) or "no fail-to-pass test ran"
    return Judged(applies=bool(ctx.found.fail_to_pass), judged=bool(out.judged_twice),
                  why="" if out.judged_twice else f"no fail-to-pass test was judged twice ({once})",
                  evidence=evidence)


_UNSET = {"django": "a Django test needs Django set up (its settings, its test database) as `manage.py test` "
                     "does; the second judge runs tests with no framework"}
"""Why a runner's tests are judged once whatever they do outside it."""


def _runner(ctx: Judging) -> str:
    """The reproduction's runner, in the messages ("outside unittest as well")."""
    try:
        runner = runner_of(shlex.split(ctx.job.repro or ctx.job.suite_command or ""))
    except ValueError:
        runner = None
    return runner.name if runner and runner.name not in ("script", "python-c") else (
        "its runner" if runner else "pytest")
