"""The model's tools: their schemas, and dispatch of one tool call into one observation.

Every failure becomes an observation the model can act on (`is_error` and a sentence saying what
failed and whether retrying helps). Only a broken sandbox raises, and that ends the run.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from patcher.model import ToolCall
from patcher.sandbox import Sandbox
from sandbox.commands import check_command
from sandbox.protocol import MODEL_TOOLS, ProtocolError, RunTestRequest, build_request

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
    _tool("give_up", "End the run without a fix and say why, when no change to the source code can fix the crash. "
          "Try an edit first: verification judges it, so a wrong try is safe. An honest answer. It discards "
          "your changes: when a change fixes the crash, reply with a summary instead.",
          {"reason": _STR}, ["reason"]),
]
GIVE_UP = "give_up"
AGENT_TOOLS = (*MODEL_TOOLS, GIVE_UP)
"""The sandbox's tools plus give_up, which the loop itself answers by ending the run."""
assert tuple(t["function"]["name"] for t in TOOL_SCHEMAS) == AGENT_TOOLS
SCHEMA_TOKENS = -(-len(json.dumps(TOOL_SCHEMAS)) // 4)
"""Estimated tokens the tool schemas add to every request (counted against the context budget)."""


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
    """Safe repairs only: strip a code fence; raw newlines and tabs inside strings (small models write code
    that way); single quotes and trailing commas read as Python literals (ast.literal_eval evaluates
    literals, never code); last, drop commas before a closing bracket."""
    fenced = re.fullmatch(r"```(?:json|JSON)?\s*(.*?)\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    attempts: list[Callable[[str], Any]] = [
        json.loads, lambda t: json.loads(t, strict=False), ast.literal_eval,
        lambda t: json.loads(re.sub(r",\s*([}\]])", r"\1", t), strict=False)]
    for parse in attempts:
        try:
            return parse(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError(f"arguments are not valid JSON ({error.msg} at line {error.lineno} column {error.colno}): "
                     f"{text[:200]!r}") from error


def give_up_reason(call: ToolCall) -> str:
    """The agent's explanation from a give_up call (whatever it sent, when it is not a proper object)."""
    try:
        args, _ = parse_arguments(call.arguments_raw)
    except ValueError:
        return (call.arguments_raw or "").strip()[:2000] or "no reason given"
    return str(args.get("reason") or "no reason given").strip()[:2000]


def dispatch(call: ToolCall, box: Sandbox) -> Observation:
    start = time.monotonic()

    def note(text: str, args: dict[str, Any] | str, repaired: bool = False) -> Observation:
        return Observation(call.id, call.name, args, True, text, (time.monotonic() - start) * 1000, repaired)

    if call.name not in MODEL_TOOLS:
        return note(f"There is no tool named {call.name!r}. The tools are: {', '.join(AGENT_TOOLS)}.",
                    call.arguments_raw)
    try:
        args, repaired = parse_arguments(call.arguments_raw)
    except ValueError as e:
        return note(f"Could not read the arguments of {call.name}: {e}. Send them again as one JSON object.",
                    call.arguments_raw or "")
    try:
        request = build_request(call.name, args)
        if isinstance(request, RunTestRequest):
            check_command(request.command, box.allowlist)
    except (ProtocolError, ValueError, TypeError) as e:
        return note(f"{e}. Fix the call and try again.", args, repaired)
    result = box.call(request)
    text = result.output if result.output.strip() else (
        f"{call.name} returned no output{' and failed' if result.is_error else ''}; "
        "this is not a success signal: check your arguments or try another approach.")
    return Observation(call.id, call.name, args, result.is_error or not result.output.strip(), text,
                       (time.monotonic() - start) * 1000, repaired)


_DECODER = json.JSONDecoder(strict=False)
"""strict=False: a call written in the text may hold code with raw newlines inside its strings."""
MAX_CONTENT_SCAN = 64
"""Most `{`/`[` positions of a reply's text tried as the start of a JSON tool call."""


def calls_in_content(content: str | None, prefix: str = "content_call") -> list[ToolCall]:
    """Tool calls a model wrote as JSON in its text ({"name": …, "arguments": {…}}), as small models do.

    The JSON may stand alone, sit in a code fence or tags (<tool_call>…</tool_call>) or follow prose;
    a list of calls counts too. Only names of real tools count, so prose with braces runs nothing.
    """
    calls: list[ToolCall] = []
    pos, tried = 0, 0
    while content and tried < MAX_CONTENT_SCAN:
        starts = [i for i in (content.find("{", pos), content.find("[", pos)) if i >= 0]
        if not starts:
            break
        start, tried = min(starts), tried + 1
        try:
            value, end = _DECODER.raw_decode(content, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found = [c for item in (value if isinstance(value, list) else [value]) if (c := _as_call(item))]
        for name, raw in found:
            calls.append(ToolCall(id=f"{prefix}_{len(calls) + 1}", name=name, arguments_raw=raw))
        pos = end if found else start + 1
    return calls


def _as_call(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    item = item["function"] if isinstance(item.get("function"), dict) else item
    name = item.get("name") or item.get("tool")
    args = item.get("arguments", item.get("args", item.get("parameters", {})))
    if not (isinstance(name, str) and name in AGENT_TOOLS):
        return None
    return name, args if isinstance(args, str) else json.dumps(args)
