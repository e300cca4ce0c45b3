"""One test command in a box, and what its runner proved: the harness's stream, report and exit code agree.

Every pytest and unittest run goes through the harness (sandbox/harness): per-test outcomes leave the
test process on a signed channel as each test ends (patcher/verify/stream.py). The test ids and outcomes come
from that stream; the runner's own claims must agree with it, else the run is `tampered`.
- pytest (`pytest …`, `python -m pytest …`): the host also adds `--junitxml` into the box's report dir
  and parses it here (size-capped, no DTDs or entities); its test and failure counts must match the
  stream, and the exit code must match the harness's end record. Exit 5 (nothing collected) is never
  reported.
- `python -m unittest …`: run by the harness's unittest runner; the stream alone gives the tests.
- A project's own unittest-based runner (`python manage.py test …`: "django"; any other `python -m MODULE …`
  or `python SCRIPT.py …` the allowlist lets through: "script"): run under the harness's script runner,
  which reports every unittest result the runner makes; the stream gives the tests. The exit code is the
  runner's own verdict (the harness records it in its end record, so it must still agree with the
  process's): a non-zero exit with no failing test in the stream fails the run as one test named after
  the command, never as tampering.
- `python -c …`: the exit code alone; the command itself is the one test.
Anything else, a refusal or a timeout: outcome "error".
"""

from __future__ import annotations

import re
import secrets
import shlex
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from patcher.sandbox import Sandbox
from patcher.verify.stream import CLAIMING_EXITS, Stream, check, crashed, read_stream
from sandbox.commands import RUNNERS, check_command, runner_of
from sandbox.protocol import ReadReportRequest, RunTestRequest

MAX_REPORT_BYTES = 8 * 1024 * 1024
OUTPUT_TAIL = 4000
_DTD = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_TEST_PATH_PART = re.compile(r"test_\w*|\w*_test|tests?")


@dataclass
class TestRun:
    command: str
    exit_code: int | None
    timed_out: bool
    reported: bool
    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    output_tail: str = ""
    duration_ms: float = 0.0
    failure_text: str = ""
    """The output's tail: where an exception type is looked for when there is no stream (`python -c`)."""
    tampered: str = ""
    """Why stream, report and exit code disagree; empty when they agree."""
    stream: Stream | None = None
    answered_by: str = ""
    """The command whose run answered this one (verify/contain.py); empty when it ran on its own."""
    records: list[dict[str, Any]] = field(default_factory=list)
    """The signed records that are not test outcomes (the held-out judge's answers asked inside the run)."""

    __test__ = False

    @property
    def outcome(self) -> str:
        if self.timed_out or not self.reported:
            return "error"
        return "passed" if self.exit_code == 0 and not self.failed else "failed"

    def described(self) -> str:
        """The run's outcome in a few words, for messages."""
        if self.timed_out:
            return "timed out"
        if self.exit_code is None:
            return self.output_tail.strip().splitlines()[-1][:200] if self.output_tail.strip() else "did not run"
        if not self.reported:
            return f"exit code {self.exit_code} with no test report, so no test is known to have run"
        return f"exit code {self.exit_code}, {len(self.passed)} passed, {len(self.failed)} failed"

    def crashed(self, exception_type: str | None, site: tuple[str, str] | None) -> bool:
        """Whether a failing test raised the exception type through the crash site, as the harness saw it.

        Only `python -c` (no harness) falls back to the type's name in the output."""
        if self.stream is not None:
            return crashed(self.stream, self.failed, exception_type, site)
        return self.shows(exception_type)

    def shows(self, exception_type: str | None) -> bool:
        """Whether the output names the exception type (its last dotted part); True when the type is unknown."""
        if not exception_type:
            return True
        name = exception_type.rsplit(".", 1)[-1]
        if re.search(rf"(?<![\w.]){re.escape(name)}\b|\.{re.escape(name)}\b", self.failure_text):
            return True
        # pytest's rewritten asserts print `E   assert …` without the type.
        return name == "AssertionError" and bool(re.search(r"^(?:E\s+)?assert\b", self.failure_text, re.MULTILINE))


HARNESSED = tuple(dict.fromkeys(r.name for r in RUNNERS if r.harness))
"""Kinds whose tests the harness streams out."""
OWN = tuple(dict.fromkeys(r.name for r in RUNNERS if r.own))
"""Kinds whose exit code is their verdict (a project's own runner)."""


def command_kind(argv: list[str]) -> str:
    """The name of the runner `argv` runs (sandbox/commands.py), "other" for a command no runner runs."""
    runner = runner_of(argv)
    return runner.name if runner else "other"


def pytest_prefix(command: str) -> list[str]:
    """`pytest` or `python -m pytest` as the command spells it (for reruns by node id)."""
    argv = shlex.split(command)
    return argv[:1] if argv[:1] == ["pytest"] else argv[:3]


def _with_options(argv: list[str], options: list[str]) -> list[str]:
    if "--" in argv:
        at = argv.index("--")
        return argv[:at] + options + argv[at:]
    return argv + options


def run_tests(box: Sandbox, command: str, name: str, deadline_s: float | None = None, heldout: str = "") -> TestRun:
    """Run `command` in the box and decide from exit code and report what it proved (`heldout`: a held-out job the
    harness asks inside the run; its answers are the run's `records`)."""
    started = time.monotonic()
    try:
        argv = check_command(command, box.allowlist)
    except ValueError as e:
        return TestRun(command, None, False, False, output_tail=str(e))
    kind = command_kind(argv)
    report = f"{name}-{secrets.token_hex(4)}.xml"
    report_dir = box.report_dir
    if kind == "pytest":
        argv = _with_options(argv, [f"--junitxml={report_dir}/{report}", "-o", "junit_family=xunit1",
                                    "-p", "no:cacheprovider", "--continue-on-collection-errors"])
    elif kind == "unittest" and "-v" not in argv:
        at = 4 if argv[3:4] == ["discover"] else 3  # `discover` must stay first to be a sub-command
        argv = [*argv[:at], "-v", *argv[at:]]
    result = box.call(RunTestRequest(command=shlex.join(argv), evidence=kind in HARNESSED,
                                     heldout=heldout if kind in HARNESSED else ""), deadline_s)
    output = result.output
    run = TestRun(command, result.exit_code, result.timed_out, False, output_tail=output[-OUTPUT_TAIL:],
                  failure_text=output[-64 * 1024:])
    if result.exit_code is None or result.timed_out:
        pass
    elif kind in HARNESSED:
        _read_stream(box, result.data, report if kind == "pytest" else None, run, verdict=kind in OWN)
    elif kind == "python-c":
        run.reported = True
        (run.passed if result.exit_code == 0 else run.failed).add(command)
    run.duration_ms = (time.monotonic() - started) * 1000
    return run


def _read_stream(box: Sandbox, data: Mapping[str, Any], report: str | None, run: TestRun,
                 verdict: bool = False) -> None:
    stream = read_stream(data)
    got = data.get("evidence")
    run.records = [r for r in (got.get("records") or []) if r.get("k") not in ("test", "end")] \
        if isinstance(got, dict) else []
    counts = None
    if report is not None and stream.end is not None and run.exit_code in CLAIMING_EXITS:
        parsed = _read_junit(box, report)
        counts = (parsed.total, len(parsed.failed)) if parsed else (-1, -1)
    run.tampered = check(stream, run.exit_code, counts, exit_is_verdict=verdict) or ""
    if run.tampered or stream.end is None or not stream.total:
        return
    run.stream, run.passed, run.failed = stream, stream.passed, set(stream.failed)
    if verdict and run.exit_code != 0 and not run.failed:
        run.failed.add(f"{run.command} (exit {run.exit_code})")
    run.reported = run.exit_code in CLAIMING_EXITS or (verdict and run.exit_code is not None)


def _read_junit(box: Sandbox, report: str) -> JUnitReport | None:
    got = box.call(ReadReportRequest(name=report))
    if got.is_error or got.truncated_bytes:
        return None
    return parse_junit(got.output)


@dataclass
class JUnitReport:
    passed: set[str]
    failed: set[str]
    total: int
    messages: str


def parse_junit(text: str) -> JUnitReport | None:
    """The tests of a JUnit XML by pytest node id; None when it is too big, declares a DTD or entities,
    or does not parse. A test with a failure or error anywhere (a teardown error too) is failed."""
    if len(text.encode()) > MAX_REPORT_BYTES or _DTD.search(text):
        return None
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    if root.tag not in ("testsuites", "testsuite"):
        return None
    seen: set[str] = set()
    failed: set[str] = set()
    skipped: set[str] = set()
    messages: list[str] = []
    for case in root.iter("testcase"):
        node = node_id(case.get("classname", ""), case.get("name", ""), case.get("file"))
        seen.add(node)
        bad = [c for c in case if c.tag in ("failure", "error")]
        if bad:
            failed.add(node)
            messages += [f"{c.get('type', '')} {c.get('message', '')}\n{(c.text or '')[-8192:]}" for c in bad]
        elif any(c.tag == "skipped" for c in case):
            skipped.add(node)
    return JUnitReport(seen - failed - skipped, failed, len(seen), "\n".join(messages)[-256 * 1024:])


def node_id(classname: str, name: str, file: str | None) -> str:
    """pytest's node id from a JUnit testcase (`tests/test_x.py::Class::name`), best effort.

    pytest builds classname from the node id (path with "/" → "." and ".py" cut, then the classes);
    the xunit1 `file` attribute says how many leading parts are the path."""
    parts = [p for p in classname.split(".") if p] if classname else []
    if file and file.endswith(".py"):
        n_path = len(file[:-3].split("/"))
        if parts[:n_path] == file[:-3].split("/"):
            return "::".join([file, *parts[n_path:], name]) if parts else file
    if not parts:  # a collection error: name is the dotted module path
        return name.replace(".", "/") + ".py" if name else "?"
    cut = max((i for i, p in enumerate(parts) if _TEST_PATH_PART.fullmatch(p)), default=0)
    return "::".join(["/".join(parts[: cut + 1]) + ".py", *parts[cut + 1 :], name])
