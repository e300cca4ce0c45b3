"""Spectrum-based fault localization: which repo lines the failing tests ran and few passing tests did.

The suite runs once in the box under sandbox/linecov.py (line coverage per test, by harness code outside
the repo, through the allowed `python -c` command); each non-test source line gets its Ochiai score

    ochiai(line) = failed(line) / sqrt(total_failed * (failed(line) + passed(line)))

(as in GZoltar, TBar, SimFix). Only pytest suites are measured; anything else gives no ranking and the
engine falls back to the traceback's frames. The coverage file is written by the process under test, so
it only orders candidates: a falsified one wastes checks, it cannot make anything verified.
"""

from __future__ import annotations

import json
import math
import secrets
import shlex
from dataclasses import dataclass

from patcher.sandbox import Sandbox
from patcher.verify import Job, is_test_or_config, run_tests
from sandbox.commands import runner_of
from sandbox.protocol import ReadReportRequest

HARNESS = "/opt/patcher/sandbox/linecov.py"
"""Where the image puts the harness (Dockerfile.sandbox copies sandbox/ to /opt/patcher)."""


@dataclass(frozen=True)
class Suspect:
    path: str
    line: int
    score: float


def coverage_command(command: str, out: str) -> str | None:
    """The suite command under the coverage harness, or None when it is not a pytest command."""
    argv = shlex.split(command)
    runner = runner_of(argv)
    if runner is None or runner.name != "pytest":
        return None
    args = argv[runner.start:]
    boot = f'exec(open("{HARNESS}").read())'
    return shlex.join(["python", "-c", boot, out, "--", *args])


def coverage_ranking(box: Sandbox, command: str, deadline_s: float, failing: set[str],
                     runs: list[dict[str, object]] | None = None) -> list[Suspect]:
    """Ochiai ranking from one run of `command` with coverage; [] when it cannot be measured. The
    per-test records (id, outcome, lines by file) are appended to `runs` when it is given."""
    name = f"linecov-{secrets.token_hex(4)}.json"
    wrapped = coverage_command(command, f"{box.report_dir}/{name}")
    if wrapped is None:
        return []
    run = run_tests(box, wrapped, "linecov", deadline_s)
    if run.timed_out or run.exit_code not in (0, 1):
        return []
    got = box.call(ReadReportRequest(name=name))
    if got.is_error or got.truncated_bytes:
        return []
    try:
        tests = json.loads(got.output)["tests"]
    except (ValueError, KeyError, TypeError):
        return []
    tests = tests if isinstance(tests, list) else []
    if runs is not None:
        runs.extend(t for t in tests if isinstance(t, dict))
    return ochiai(tests, failing)


def ochiai(tests: list[dict[str, object]], failing: set[str]) -> list[Suspect]:
    """Ranked suspects, best first. `failing` narrows which failed tests count (the reproduction's), so a
    test that fails for another reason does not point elsewhere. Lines that score the same are ordered by
    their Ochiai over every failed test (a caller that only the reproduction runs, such as `last()` over
    a faulty `tail()` that two failing tests run, comes after its callee), then by path and line."""
    every = [t for t in tests if t.get("outcome") == "failed"]
    failed_runs = [t for t in every if not failing or t.get("id") in failing] or every
    passed = _counts([t for t in tests if t.get("outcome") == "passed"])
    score, wider = _scores(_counts(failed_runs), passed, len(failed_runs)), _scores(_counts(every), passed, len(every))
    scored = [Suspect(p, n, s) for (p, n), s in score.items() if not is_test_or_config(p)]
    return sorted(scored, key=lambda s: (-s.score, -wider[(s.path, s.line)], s.path, s.line))


def _scores(failed: dict[tuple[str, int], int], passed: dict[tuple[str, int], int], total: int
            ) -> dict[tuple[str, int], float]:
    return {line: f / math.sqrt(total * (f + passed.get(line, 0))) for line, f in failed.items()}


def _counts(runs: list[dict[str, object]]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for run in runs:
        lines = run.get("lines")
        for path, numbers in (lines.items() if isinstance(lines, dict) else ()):
            for n in numbers if isinstance(numbers, list) else ():
                if isinstance(path, str) and isinstance(n, int):
                    out[(path, n)] = out.get((path, n), 0) + 1
    return out


def rank_of(suspects: list[Suspect], path: str, line: int) -> int | None:
    """1-based position of a line in the ranking (ties broken by position in the file), None if absent."""
    return next((i for i, s in enumerate(suspects, 1) if (s.path, s.line) == (path, line)), None)


def suspects_for(job: Job) -> list[Suspect]:
    """The coverage ranking for the agent's task text (the template engine measures its own), in a box of
    its own: files the suite writes must not end up in the agent's diff. Only when the traceback's innermost
    repository frame is a test (a wrong value, not a crash): otherwise the traceback already points into
    the code, and a suite run under line tracing would cost more than the whole rest of the job."""
    if job.repro is None or job.base.repro is None or (job.site and not is_test_or_config(job.site[0])):
        return []
    deadline = max(30.0, 10 * job.base.suite.duration_ms / 1000)
    with job.open_box(job.staged) as box:
        return coverage_ranking(box, job.suite_command, deadline, job.base.repro.failed)
