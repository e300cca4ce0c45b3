"""Wire types shared by the host and the tool server (with commands.py: what a test command may be and which
runner it runs).

One request, one result. On the wire each is one JSON line:

    host -> server   {"hello": {"key": "<hex>", "allow": [["pytest"], ...]}}      (first line only)
    host -> server   {"id": 7, "tool": "read_file", "args": {...}, "deadline_s": 30.0}
    server -> host   {"id": 7, "result": {...}, "mac": "<hex hmac-sha256 of the result JSON>"}

The key arrives on stdin before any repository code runs and lives only in the (non-dumpable)
server's memory, so a process of the code under repair cannot forge a result the host accepts.
Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Union

NO_DATA: Mapping[str, Any] = MappingProxyType({})
"""A result's data when it has none: one shared mapping, so read-only."""

MAX_MODEL_OUTPUT = 64 * 1024
"""Bytes of tool output a model sees; the rest is cut with a note saying how much."""

MAX_WRITE_BYTES = 2 * 1024 * 1024
"""Largest file content `write_file` / `edit_file` accept."""

REPORT_DIR = "/tmp/patcher-reports"
"""Outside the repo; the host points `--junitxml` here and fetches the file with ReadReportRequest."""


class ReadFileRequest(NamedTuple):
    path: str
    start_line: int | None = None
    end_line: int | None = None


class SearchCodeRequest(NamedTuple):
    pattern: str
    path: str | None = None
    glob: str | None = None


class GitDiffRequest(NamedTuple):
    ref: str | None = None


class WriteFileRequest(NamedTuple):
    path: str
    content: str


class EditFileRequest(NamedTuple):
    path: str
    old_text: str
    new_text: str


class RunTestRequest(NamedTuple):
    command: str
    evidence: bool = False
    """Host only: run under the harness and return its signed per-test records in data["evidence"]."""
    heldout: str = ""
    """Host only, with `evidence`: a held-out job (JSON) whose inputs the harness asks inside the run."""


class JudgeRequest(NamedTuple):
    """Run tests under the second judge (sandbox/judge/), outside pytest. Host only, not a model tool.

    `job` is JSON: {"cases": [{"id", "test": node id, "source": module text or null, "tree": "base"|"patched",
    "group", "contexts": [...], "required": [line, ...]}], "restore": {path: base64 content or null},
    "patched": bool, "contexts": ["bare", "dressed"], "observe": {tree: {"lines": {path: [n...]}, "tests": [...]}}}
    (restore: the `base` tree's files put back as they were; `patched`: a second copy as it is; judging.py says
    what the contexts are). data: {"evidence": the first context's, "contexts": {name: {"evidence", ...}}}."""

    job: str


class HeldOutRequest(NamedTuple):
    """Run the held-out judge (sandbox/judge/heldout/patcher_heldout.py) in a fresh copy of the tree. Host only.

    `job` is JSON: {"mode": "record" | "call", "restore": {path: base64 content or null}, ...the mode's fields}
    (sandbox/heldout.py; the modes' fields in judge/heldout/record.py and judge/heldout/calls.py)."""

    job: str


class ReadReportRequest(NamedTuple):
    """Fetch a file from the report dir (REPORT_DIR, e.g. a JUnit XML the host asked pytest for).

    Not a model tool: only the host sends it."""

    name: str


class CheckRequest(NamedTuple):
    """Run a pytest command in a process forked from a warm interpreter (sandbox/forks.py). Host only: a
    fix candidate's check, cheaper than `run_test` and with weaker evidence (unsigned per-test outcomes in
    data["passed"] and data["failed"]); never used to verify."""

    command: str
    start: bool = False
    """Only start the warm interpreter this command would fork from, in the background, and answer at once
    (the host does it before its coverage run, so the imports overlap it); the next check waits for it."""


class PingRequest(NamedTuple):
    """Answered "pong": the server is alive and in step."""


class ModulesRequest(NamedTuple):
    """Top-level import names of the distributions installed in the box (data["modules"]). Host only."""


Request = Union[  # not `A | B`: evaluated at import, and a box may run Python 3.9
    ReadFileRequest,
    SearchCodeRequest,
    GitDiffRequest,
    WriteFileRequest,
    EditFileRequest,
    RunTestRequest,
    JudgeRequest,
    HeldOutRequest,
    ReadReportRequest,
    PingRequest,
    ModulesRequest,
    CheckRequest,
]

REQUEST_TYPES: dict[str, type[Request]] = {
    "read_file": ReadFileRequest,
    "search_code": SearchCodeRequest,
    "git_diff": GitDiffRequest,
    "write_file": WriteFileRequest,
    "edit_file": EditFileRequest,
    "run_test": RunTestRequest,
    "judge": JudgeRequest,
    "held_out": HeldOutRequest,
    "read_report": ReadReportRequest,
    "ping": PingRequest,
    "modules": ModulesRequest,
    "check": CheckRequest,
}
TOOL_NAMES: dict[type, str] = {v: k for k, v in REQUEST_TYPES.items()}
MODEL_TOOLS = ("read_file", "search_code", "git_diff", "write_file", "edit_file", "run_test")


class ToolResult(NamedTuple):
    """One answer: `output` is what a model reads (an error when is_error), `data` what the host reads."""

    is_error: bool
    output: str
    exit_code: int | None = None
    truncated_bytes: int = 0
    timed_out: bool = False
    duration_ms: float = 0.0
    data: Mapping[str, Any] = NO_DATA

    @classmethod
    def error(cls, sentence: str, **kw: Any) -> ToolResult:
        return cls(is_error=True, output=sentence, **kw)


class ProtocolError(ValueError):
    """A line that is not a valid request or result."""


def build_request(tool: str, args: dict[str, Any]) -> Request:
    """Typed request from a tool name and its arguments; ProtocolError says what is wrong."""
    if tool not in REQUEST_TYPES:
        raise ProtocolError(f"unknown tool {tool!r}; tools: {', '.join(MODEL_TOOLS)}")
    cls = REQUEST_TYPES[tool]
    fields: dict[str, str] = cls.__annotations__  # name -> type, as written (a string: postponed annotations)
    unknown = sorted(set(args) - set(fields))
    required = [n for n in fields if n not in cls._field_defaults]
    missing = [n for n in required if n not in args]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"unknown argument(s) {', '.join(unknown)}")
        if missing:
            parts.append(f"missing required argument(s) {', '.join(missing)}")
        raise ProtocolError(f"{tool}: {'; '.join(parts)}; it takes {', '.join(fields)}")
    for name, value in args.items():
        if value is None:
            continue
        want = fields[name]
        if "int" in str(want) and not (isinstance(value, int) and not isinstance(value, bool)):
            raise ProtocolError(f"{tool}: argument {name} must be an integer, got {value!r}")
        if "str" in str(want) and "int" not in str(want) and not isinstance(value, str):
            raise ProtocolError(f"{tool}: argument {name} must be a string, got {type(value).__name__}")
    return cls(**args)


def encode_request(call_id: int, request: Request, deadline_s: float) -> bytes:
    body = {"id": call_id, "tool": TOOL_NAMES[type(request)], "args": request._asdict(),
            "deadline_s": deadline_s}
    return (json.dumps(body) + "\n").encode()


def decode_request(line: bytes) -> tuple[int, Request, float]:
    try:
        body = json.loads(line)
        call_id, tool, args = body["id"], body["tool"], body.get("args") or {}
        deadline = float(body.get("deadline_s", 60.0))
    except (ValueError, KeyError, TypeError) as e:
        raise ProtocolError(f"bad request line: {e}") from e
    return call_id, build_request(tool, args), deadline


def sign(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def encode_result(call_id: int, result: ToolResult, key: bytes) -> bytes:
    payload = json.dumps({**result._asdict(), "data": dict(result.data)}, sort_keys=True)
    line = json.dumps({"id": call_id, "result": payload, "mac": sign(key, f"{call_id}:{payload}")})
    return (line + "\n").encode()


def decode_result(line: bytes, key: bytes) -> tuple[int, ToolResult]:
    try:
        body = json.loads(line)
        call_id, payload, mac = body["id"], body["result"], body["mac"]
    except (ValueError, KeyError, TypeError) as e:
        raise ProtocolError(f"bad result line: {e}") from e
    if not hmac.compare_digest(mac, sign(key, f"{call_id}:{payload}")):
        raise ProtocolError("result signature does not match: the line was not written by the tool server")
    return call_id, ToolResult(**json.loads(payload))

