"""The model's tools: their schemas, and dispatch of one tool call into one observation.

Every failure becomes an observation the model can act on (`is_error` and a sentence saying what
failed and whether retrying helps). Only a broken sandbox raises, and that ends the run.
"""

from __future__ import annotations

import ast
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from sandbox.protocol import DEFAULT_ALLOWLIST, MODEL_TOOLS, ProtocolError, RunTestRequest, build_request, check_command

from .llm import ToolCall
from .sandbox import Sandbox

_STR = {"type": "string"}
_INT = {"type": "integer"}


def _tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": required, "additionalProperties": False}}}


TOOL_SCHEMAS = [
    _tool("read_file", "Read a file of the repository as numbered lines (1-based, inclusive range).",
          {"path": _STR, "start_line": _INT, "end_line": _INT}, ["path"]),
    _tool("search_code", "Search the repository with a ripgrep regex; returns file:line:text matches.",
          {"pattern": _STR, "path": _STR, "glob": _STR}, ["pattern"]),
    _tool("git_diff", "Show your changes so far as a unified diff (or, with ref, what changed between ref and base).",
          {"ref": _STR}, []),
    _tool("write_file", "Create or overwrite a file of the repository with the given content.",
          {"path": _STR, "content": _STR}, ["path", "content"]),
    _tool("edit_file", "Replace old_text (which must occur exactly once) with new_text in a file.",
          {"path": _STR, "old_text": _STR, "new_text": _STR}, ["path", "old_text", "new_text"]),
    _tool("run_test", "Run an allowed test command (python -m pytest …, pytest …, python -m unittest …, "
          "python -c …) without a shell; returns the exit code and output.", {"command": _STR}, ["command"]),
]
assert tuple(t["function"]["name"] for t in TOOL_SCHEMAS) == MODEL_TOOLS


@dataclass
class Observation:
    call_id: str
    tool: str
    args: dict[str, Any] | str
    is_error: bool
    text: str
    duration_ms: float
    repaired: bool = False


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], bool]:
    """Arguments as a dict, repaired where safe (fences, single quotes, trailing commas). ValueError if not."""
    text = (raw or "").strip() or "{}"
    try:
        value, repaired = json.loads(text), False
    except json.JSONDecodeError as first:
        value, repaired = _repair(text, first), True
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value, repaired


def _repair(text: str, error: json.JSONDecodeError) -> Any:
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    candidate = re.sub(r",\s*([}\]])", r"\1", candidate)
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    try:
        value = ast.literal_eval(candidate)  # single-quoted dicts; literals only, nothing is executed
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"arguments are not valid JSON ({error.msg} at line {error.lineno} column {error.colno}): "
                         f"{text[:200]!r}") from error
    return value


def dispatch(call: ToolCall, box: Sandbox, allowlist: tuple[tuple[str, ...], ...] = DEFAULT_ALLOWLIST) -> Observation:
    start = time.monotonic()

    def note(text: str, args: dict[str, Any] | str, repaired: bool = False) -> Observation:
        return Observation(call.id, call.name, args, True, text, (time.monotonic() - start) * 1000, repaired)

    if call.name not in MODEL_TOOLS:
        return note(f"There is no tool named {call.name!r}. The tools are: {', '.join(MODEL_TOOLS)}.",
                    call.arguments_raw)
    try:
        args, repaired = parse_arguments(call.arguments_raw)
    except ValueError as e:
        return note(f"Could not read the arguments of {call.name}: {e}. Send them again as one JSON object.",
                    call.arguments_raw or "")
    try:
        request = build_request(call.name, args)
        if isinstance(request, RunTestRequest):
            check_command(request.command, allowlist)
    except (ProtocolError, ValueError, TypeError) as e:
        return note(f"{e}. Fix the call and try again.", args, repaired)
    result = box.call(request)
    text = result.output if result.output.strip() else (
        f"{call.name} returned no output{' and failed' if result.is_error else ''}; "
        "this is not a success signal: check your arguments or try another approach.")
    return Observation(call.id, call.name, args, result.is_error or not result.output.strip(), text,
                       (time.monotonic() - start) * 1000, repaired)


_CONTENT_CALL = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def calls_in_content(content: str | None, prefix: str = "content_call") -> list[ToolCall]:
    """Tool calls a model wrote as JSON in its text ({"name": …, "arguments": {…}}), as small models do."""
    if not content or "{" not in content:
        return []
    blocks = _CONTENT_CALL.findall(content) or [content]
    calls: list[ToolCall] = []
    for block in blocks:
        try:
            value = json.loads(block.strip())
        except json.JSONDecodeError:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue
            item = item.get("function", item) if isinstance(item.get("function"), dict) else item
            name = item.get("name") or item.get("tool")
            args = item.get("arguments", item.get("args", item.get("parameters", {})))
            if isinstance(name, str) and name in MODEL_TOOLS:
                raw = args if isinstance(args, str) else json.dumps(args)
                calls.append(ToolCall(id=f"{prefix}_{len(calls) + 1}", name=name, arguments_raw=raw))
    return calls
