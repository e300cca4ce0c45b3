"""The model seam: the `LLM` Protocol, an OpenAI-compatible client, and how a reply is classified.

`complete()` asks once (retrying transient failures) and classifies the answer. It never runs tools and
never decides what a stop means for the job; the loop does. Replies are streamed (model/stream.py), so a
slow server is judged by the silence between chunks (`idle_timeout_s`) and by a ceiling on the whole reply
(`reply_timeout_s`), never by one deadline on the whole request. A request the server may still be
answering is never sent again: retried are only failures before the server had it (connection refused or
reset, a connect timeout) and answers that say to retry (429, 5xx). Failures end the job:

    4xx other than 429                          -> ModelError at once (status + the server's message)
    429, 5xx, retries exhausted                 -> ModelError
    a deadline passed (idle or reply)           -> ModelError at once, naming the deadline and its setting
    cannot connect, retries exhausted           -> ModelUnreachable (exit 3), naming the base URL
"""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from patcher.errors import ModelError
from patcher.model.config import ModelConfig
from patcher.model.retry import call_with_retries
from patcher.model.stream import ProgressHook, read_stream

T = TypeVar("T")
Stop = Literal["finished", "wants_tool", "cut_off", "blocked", "unknown"]

_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_raw: str


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: list[ToolCall]
    stop_raw: str | None
    stop: Stop
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    duration_ms: float
    model: str
    message: dict[str, Any]
    tokens_estimated: bool = False
    attempts: int = 1


class LLM(Protocol):
    @property
    def provider(self) -> str:
        """gen_ai.provider.name on telemetry spans."""
        ...

    @property
    def model_name(self) -> str:
        """The model asked for ("" when the server picks one)."""
        ...

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply: ...


def normalise_stop(finish_reason: str | None, has_tool_calls: bool) -> Stop:
    """Classify a finish_reason. cut_off, blocked and unknown win over any tool calls present.

    "stop" with tool calls, and a missing finish_reason with tool calls, mean wants_tool (servers differ);
    "tool_calls"/"function_call" without any tool call is unknown, since there is nothing to run.
    """
    if finish_reason == "length":
        return "cut_off"
    if finish_reason == "content_filter":
        return "blocked"
    if finish_reason in ("tool_calls", "function_call", "stop", None) and has_tool_calls:
        return "wants_tool"
    if finish_reason == "stop":
        return "finished"
    return "unknown"


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """Rough token count (characters / 4, plus a little per message), tool-call arguments included."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(str(part.get("text", ""))) for part in content if isinstance(part, dict))
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            chars += len(str(fn.get("name", ""))) + len(str(fn.get("arguments", "")))
    return math.ceil(chars / 4) + 4 * len(messages)


def price(prices: Mapping[str, tuple[float, float]], models: list[str], tokens_in: int,
          tokens_out: int) -> float | None:
    """Cost in USD for the first of `models` the table knows (dated snapshots match their base name)."""
    for name in models:
        for candidate in (name, _DATE_SUFFIX.sub("", name)):
            if candidate in prices:
                per_in, per_out = prices[candidate]
                return (tokens_in * per_in + tokens_out * per_out) / 1_000_000
    return None


class OpenAIModel:
    """An `LLM` over any OpenAI-compatible chat-completions endpoint."""

    provider = "openai"

    def __init__(self, config: ModelConfig, on_progress: ProgressHook | None = None) -> None:
        self.config = config
        self.on_progress = on_progress
        """Told how a streamed reply is going, about once a second (the trace's `model_stream` events)."""
        key = config.api_key.get_secret_value() if config.api_key else "unused"
        idle = config.idle_timeout_s
        timeout = openai.Timeout(idle) if config.stream else openai.Timeout(config.reply_timeout_s, connect=idle)
        self._client = openai.OpenAI(api_key=key, base_url=config.base_url, timeout=timeout, max_retries=0)
        self._missing_ids = itertools.count(1)
        self._usage_option = True
        """Whether to ask for usage in the stream (`stream_options`); off once the server refuses the option."""

    @property
    def model_name(self) -> str:
        return self.config.model

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        cfg = self.config
        kwargs: dict[str, Any] = {"model": cfg.model, "messages": messages, cfg.max_tokens_param: cfg.max_tokens}
        if tools:
            kwargs |= {"tools": tools, "tool_choice": "auto"}
        started = time.monotonic()
        response, attempts = self._call(lambda: self._ask(kwargs))
        return self._reply(response, messages, tools, round((time.monotonic() - started) * 1000, 2),
                           attempts)

    def _ask(self, kwargs: dict[str, Any]) -> ChatCompletion:
        cfg, started = self.config, time.monotonic()
        if not cfg.stream:
            return self._client.chat.completions.create(**kwargs)
        usage = {"stream_options": {"include_usage": True}} if self._usage_option else {}
        try:
            stream = self._client.chat.completions.create(**kwargs, stream=True, **usage)  # type: ignore[call-overload]
        except openai.BadRequestError as e:
            if not usage or "stream_options" not in str(e):
                raise
            self._usage_option = False  # an older server: usage is estimated from then on
            stream = self._client.chat.completions.create(**kwargs, stream=True)
        return read_stream(stream, started, cfg.idle_timeout_s, cfg.reply_timeout_s, self.on_progress,
                           self.base_url)

    def list_models(self) -> list[str]:
        """Model ids the endpoint serves (for `patcher doctor`); same retries and errors as complete()."""
        page, _ = self._call(lambda: self._client.models.list())
        return [m.id for m in page.data]

    def _call(self, fn: Callable[[], T]) -> tuple[T, int]:
        return call_with_retries(fn, self.config, self.base_url)

    def _reply(self, response: ChatCompletion, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               duration_ms: float, attempts: int) -> ModelReply:
        """The reply, read defensively: the client does not validate, and servers send odd shapes."""
        choices = response.choices if isinstance(response, ChatCompletion) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        msg = getattr(choice, "message", None)
        if not isinstance(msg, ChatCompletionMessage) or not isinstance(msg.tool_calls, list | None):
            raise ModelError(f"model endpoint {self.base_url} did not answer like a chat-completions API "
                             f"(no choice with a message in the response)")
        calls = []
        for tc in msg.tool_calls or []:
            fn = getattr(tc, "function", None)
            args = getattr(fn, "arguments", None)
            calls.append(ToolCall(id=str(getattr(tc, "id", None) or f"call_missing_{next(self._missing_ids)}"),
                                  name=str(getattr(fn, "name", None) or ""),
                                  arguments_raw=args if isinstance(args, str) else "" if args is None
                                  else json.dumps(args, default=str)))
        content = _text(msg.content)
        message: dict[str, Any] = {"role": "assistant", "content": content if content is not None or calls else ""}
        if calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments_raw}}
                                     for c in calls]
        usage = response.usage
        counts = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        estimated = not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        if estimated:
            counts = (estimate_tokens(messages) + math.ceil(len(json.dumps(tools)) / 4), estimate_tokens([message]))
        tokens_in, tokens_out = int(counts[0] or 0), int(counts[1] or 0)
        model = response.model if isinstance(response.model, str) and response.model else self.config.model
        raw = getattr(choice, "finish_reason", None)
        finish = raw if isinstance(raw, str | None) else str(raw)
        return ModelReply(
            content=content, tool_calls=calls, stop_raw=finish, stop=normalise_stop(finish, bool(calls)),
            tokens_in=tokens_in, tokens_out=tokens_out,
            cost_usd=price(self.config.prices, [model, self.config.model], tokens_in, tokens_out),
            duration_ms=duration_ms, model=model, message=message, tokens_estimated=estimated,
            attempts=attempts)


def _text(content: Any) -> str | None:
    """Message content as text: a list of parts (some servers send one) is joined; anything else is str()."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)
