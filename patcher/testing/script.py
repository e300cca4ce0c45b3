"""The steps of a script: replies and faults, and the builders tests use to write them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

CREATED = 1_700_000_000
NULL_FINISH = "\x00null"
"""Pass as `finish_reason` to send `"finish_reason": null`."""


@dataclass(frozen=True)
class Reply:
    content: str | None
    tool_calls: tuple[tuple[str, str], ...]
    finish_reason: str | None
    usage: tuple[int, int] | None
    send_usage: bool = True
    model: str | None = None
    token_delay_s: float = 0.0
    """Pause before each chunk of a streamed reply (before the whole of a plain one: all the pauses)."""
    silent_after: int | None = None
    """Send this many chunks of a streamed reply, then nothing more while the connection stays open."""


@dataclass(frozen=True)
class HttpError:
    status: int
    body: dict[str, Any] | str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Delayed:
    seconds: float
    step: Step


Step = Reply | HttpError | Delayed | Callable[[dict[str, Any]], "Step"]


def reply(content: str | None = None, tool_calls: Iterable[tuple[str, dict[str, Any] | str]] = (),
          finish_reason: str | None = None, usage: tuple[int, int] | None = None, *,
          send_usage: bool = True, model: str | None = None, token_delay_s: float = 0.0,
          silent_after: int | None = None) -> Reply:
    """A reply. Tool-call arguments are a dict (sent as JSON) or a raw string (sent as is).

    finish_reason defaults to "tool_calls" when there are tool calls, else "stop"; usage defaults to a
    rough count from the request size; send_usage=False leaves `usage` out of the response.
    token_delay_s paces a streamed reply chunk by chunk (a slow local model); silent_after stops it mid-way.
    """
    calls = tuple((name, args if isinstance(args, str) else json.dumps(args)) for name, args in tool_calls)
    if finish_reason is None:
        finish_reason = "tool_calls" if calls else "stop"
    return Reply(content, calls, None if finish_reason == NULL_FINISH else finish_reason, usage,
                 send_usage, model, token_delay_s, silent_after)


def http_error(status: int, body: dict[str, Any] | str | None = None, *,
               retry_after: float | str | None = None, headers: dict[str, str] | None = None) -> HttpError:
    """An HTTP error answer; the default body is OpenAI's `{"error": {...}}` shape."""
    if body is None:
        body = {"error": {"message": f"scripted HTTP {status}", "type": "scripted_error", "code": None}}
    extra = dict(headers or {})
    if retry_after is not None:
        extra["Retry-After"] = str(retry_after)
    return HttpError(status, body, tuple(extra.items()))


def delay(seconds: float, step: Step | None = None) -> Delayed:
    """Wait `seconds` before answering with `step` (default: a plain reply) — to trip client timeouts."""
    return Delayed(seconds, step if step is not None else reply("late reply"))


def cut_off(name: str = "edit_file", partial: str = '{"path": "src/ma', content: str | None = None) -> Reply:
    """A reply stopped by the token limit: finish_reason "length" and a half-written tool call."""
    return reply(content, [(name, partial)], "length")


def malformed_args(name: str, raw: str) -> Reply:
    """A tool call whose arguments are not valid JSON (or not what the tool takes)."""
    return reply(None, [(name, raw)], "tool_calls")


def content_filter(content: str | None = None) -> Reply:
    """A reply withheld by the provider's content filter."""
    return reply(content, (), "content_filter")
