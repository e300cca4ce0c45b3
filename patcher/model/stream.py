"""A streamed reply (server-sent chunks) assembled into the completion a plain request would have answered.

Chunks are read defensively, as the client does not validate them and servers differ: content pieces are
joined; tool calls are gathered by their `index` (a piece without one continues the call of the same `id`,
else the last call), their names and argument pieces joined; the finish reason is the last one sent; usage
comes from whichever chunk carries it (OpenAI sends it last, with no choices, when asked for with
`stream_options`). How the reply is going is reported, at most once per `every_s`, to the owner's callback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_tool_call import Function

from patcher.errors import ModelError

TAIL_CHARS = 200


@dataclass(frozen=True)
class StreamProgress:
    """A reply while it streams: what a live view shows."""

    chunks: int
    chars: int
    """Characters of content and tool-call arguments so far."""
    seconds: float
    tool_calls: list[str]
    """Names of the tool calls begun so far."""
    tail: str
    """The last characters written (content or arguments)."""


ProgressHook = Callable[[StreamProgress], None]


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class Assembly:
    def __init__(self, started: float, on_progress: ProgressHook | None = None, every_s: float = 1.0) -> None:
        self.started = self._reported = started
        self.on_progress, self.every_s = on_progress, every_s
        self.chunks = self.chars = 0
        self.content: list[str] = []
        self.calls: dict[int, _Call] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.tail = ""

    def add(self, chunk: Any) -> None:
        self.chunks += 1
        self.model = _str(getattr(chunk, "model", None)) or self.model
        self.usage = getattr(chunk, "usage", None) or self.usage
        choices = getattr(chunk, "choices", None)
        for choice in choices if isinstance(choices, list) else []:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            self.finish = _str(getattr(choice, "finish_reason", None)) or self.finish
            delta = getattr(choice, "delta", None)
            if text := _str(getattr(delta, "content", None)):
                self._wrote(text)
                self.content.append(text)
            pieces = getattr(delta, "tool_calls", None)
            for piece in pieces if isinstance(pieces, list) else []:
                self._tool_piece(piece)
        now = time.monotonic()
        if self.on_progress is not None and now - self._reported >= self.every_s:
            self._reported = now
            self.on_progress(self.progress())

    def progress(self) -> StreamProgress:
        return StreamProgress(self.chunks, self.chars, round(time.monotonic() - self.started, 2),
                              [c.name for c in self.calls.values()], self.tail)

    def completion(self) -> ChatCompletion:
        calls = [ChatCompletionMessageToolCall.construct(
            id=c.id, type="function", function=Function.construct(name=c.name, arguments="".join(c.arguments)))
            for _, c in sorted(self.calls.items())]
        text = "".join(self.content)
        message = ChatCompletionMessage.construct(role="assistant", content=text or None, tool_calls=calls or None)
        choice = Choice.construct(index=0, message=message, finish_reason=self.finish, logprobs=None)
        usage = self.usage if isinstance(self.usage, CompletionUsage) else None
        return ChatCompletion.construct(id="stream", object="chat.completion", created=0, model=self.model or "",
                                        choices=[choice], usage=usage)

    def _tool_piece(self, piece: Any) -> None:
        call_id = _str(getattr(piece, "id", None))
        index = getattr(piece, "index", None)
        if not isinstance(index, int) or isinstance(index, bool):
            same = [i for i, c in self.calls.items() if call_id and c.id == call_id]
            index = same[0] if same else (len(self.calls) if call_id or not self.calls else max(self.calls))
        call = self.calls.setdefault(index, _Call())
        call.id = call_id or call.id
        fn = getattr(piece, "function", None)
        call.name = call.name or _str(getattr(fn, "name", None)) or ""  # sent whole, in the first piece
        if args := _str(getattr(fn, "arguments", None)):
            self._wrote(args)
            call.arguments.append(args)

    def _wrote(self, text: str) -> None:
        self.chars += len(text)
        self.tail = (self.tail + text)[-TAIL_CHARS:]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_stream(stream: Iterable[Any], started: float, idle_s: float, reply_s: float,
                on_progress: ProgressHook | None, where: str) -> ChatCompletion:
    """The whole streamed reply, or ModelError naming the deadline that passed (never retried: the server was
    answering). Silence is cut by the HTTP read timeout (`idle_s`); the ceiling is checked as chunks arrive."""
    assembly = Assembly(started, on_progress)
    response = getattr(stream, "response", None)
    if response is not None and "json" in response.headers.get("content-type", ""):
        return _whole(response, stream, where)  # the server ignored `stream` and answered whole
    try:
        for chunk in stream:
            assembly.add(chunk)
            if time.monotonic() - started > reply_s:
                raise ModelError(f"model endpoint {where} was still answering after {reply_s:g}s (the reply "
                                 f"deadline, PATCHER_MODEL_REPLY_TIMEOUT_S; {_so_far(assembly)})")
    except openai.APITimeoutError as e:
        raise ModelError(f"model endpoint {where} went silent for {idle_s:g}s in the middle of a reply (the idle "
                         f"deadline, PATCHER_MODEL_IDLE_TIMEOUT_S; {_so_far(assembly)})") from e
    except (openai.APIError, ValueError) as e:  # a broken connection, an error event, a chunk that is no JSON
        raise ModelError(f"model endpoint {where}: the reply broke off ({_so_far(assembly)}): "
                         f"{' '.join(str(e).split())[:300]}") from e
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()
    if not assembly.chunks:
        raise ModelError(f"model endpoint {where} did not answer like a chat-completions API (a stream of no chunks)")
    return assembly.completion()


def _whole(response: Any, stream: Any, where: str) -> ChatCompletion:
    try:
        data = json.loads(response.read())
    except (openai.APIError, ValueError) as e:
        raise ModelError(f"model endpoint {where} did not answer like a chat-completions API ({e})") from e
    finally:
        stream.close()
    if not isinstance(data, dict):
        raise ModelError(f"model endpoint {where} did not answer like a chat-completions API (not an object)")
    return ChatCompletion.construct(**data)


def _so_far(assembly: Assembly) -> str:
    done = assembly.progress()
    return f"{done.chunks} chunk(s), {done.chars} characters in {done.seconds:.1f}s"
