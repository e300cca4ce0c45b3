"""The model seam: the `LLM` Protocol, an OpenAI-compatible client, and how a reply is classified.

`complete()` asks once (retrying transient failures) and classifies the answer. It never runs tools and
never decides what a stop means for the job; the loop does. Failures end the job:

    4xx other than 429                      -> ModelError at once (status + the server's message)
    429, 5xx or timeouts, retries exhausted -> ModelError
    cannot connect, retries exhausted       -> ModelUnreachable (exit 3), naming the base URL
"""

from __future__ import annotations

import email.utils
import itertools
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import openai
import tenacity
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from patcher.errors import BadInput, ModelError, ModelUnreachable

T = TypeVar("T")
Stop = Literal["finished", "wants_tool", "cut_off", "blocked", "unknown"]

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}
_PLACEHOLDER = re.compile(
    r"(sk-)?(\.\.\.+|x{3,}|changeme|change[-_ ]?me|replace[-_ ]?me|placeholder|todo|<.*>|your[-_ ].*)",
    re.IGNORECASE)
_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class ModelConfig(BaseModel):
    """Which model to ask, where, and how patiently."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = "gpt-4o-mini"
    """Model name sent with each request (env PATCHER_MODEL)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://localhost:8000/v1; None means api.openai.com (env OPENAI_BASE_URL)."""
    api_key: SecretStr | None = None
    """Bearer key (env OPENAI_API_KEY); placeholders are refused; unset means "unused" for a local server."""
    max_tokens: int = Field(default=4096, gt=0)
    """Cap on the tokens of one reply."""
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """Request field that carries max_tokens (newer OpenAI models accept only the second)."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Deadline of one HTTP attempt."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, on 429, 5xx, timeouts and connection errors."""
    retry_initial_s: float = Field(default=1.0, ge=0)
    """First backoff delay; it doubles each retry, plus up to as much again of jitter."""
    retry_max_s: float = Field(default=20.0, ge=0)
    """Longest backoff delay."""
    retry_after_cap_s: float = Field(default=30.0, ge=0)
    """Longest wait a Retry-After header may ask for."""
    prices: dict[str, tuple[float, float]] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    """Model -> (USD per 1M input tokens, USD per 1M output tokens); models not here cost None."""

    @model_validator(mode="after")
    def _check_endpoint_and_key(self) -> ModelConfig:
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base URL {self.base_url!r} must start with http:// or https://")
        key = self.api_key.get_secret_value().strip() if self.api_key else ""
        if _PLACEHOLDER.fullmatch(key):
            raise ValueError("OPENAI_API_KEY looks like a placeholder; set the real key "
                             "(or leave it unset for a local server that needs none)")
        if not key:
            if self.base_url is None or "api.openai.com" in self.base_url:
                raise ValueError("OPENAI_API_KEY is not set; api.openai.com needs a key "
                                 "(or set OPENAI_BASE_URL to a local server)")
            self.api_key = SecretStr("unused")
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ModelConfig:
        """Settings from PATCHER_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY; overrides that are not None win.

        Raises BadInput with one line saying what is wrong.
        """
        env = os.environ if env is None else env
        names = {"model": "PATCHER_MODEL", "base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"}
        values: dict[str, Any] = {field: env.get(var) for field, var in names.items()}
        values = {k: v for k, v in values.items() if v} | {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls(**values)
        except ValidationError as e:
            problems = "; ".join(_describe(err) for err in e.errors())
            raise BadInput(f"model settings: {problems}") from e


def _describe(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


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

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        key = config.api_key.get_secret_value() if config.api_key else "unused"
        self._client = openai.OpenAI(api_key=key, base_url=config.base_url, timeout=config.timeout_s,
                                     max_retries=0)
        self._missing_ids = itertools.count(1)

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
        response, attempts = self._call(lambda: self._client.chat.completions.create(**kwargs))
        if not isinstance(response, ChatCompletion) or not response.choices:
            raise ModelError(f"model endpoint {self.base_url} did not answer like a chat-completions API "
                             f"(no choices in the response)")
        return self._reply(response, messages, tools, round((time.monotonic() - started) * 1000, 2),
                           attempts)

    def list_models(self) -> list[str]:
        """Model ids the endpoint serves (for `patcher doctor`); same retries and errors as complete()."""
        page, _ = self._call(lambda: self._client.models.list())
        return [m.id for m in page.data]

    def _call(self, fn: Callable[[], T]) -> tuple[T, int]:
        cfg = self.config
        attempts = 0

        def attempt() -> T:
            nonlocal attempts
            attempts += 1
            return fn()

        backoff = (tenacity.wait_exponential(multiplier=cfg.retry_initial_s, max=cfg.retry_max_s)
                   + tenacity.wait_random(0, cfg.retry_initial_s))

        def wait(state: tenacity.RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            hinted = _retry_after(error)
            return min(hinted, cfg.retry_after_cap_s) if hinted is not None else backoff(state)

        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(cfg.max_retries + 1), wait=wait,
                                     retry=tenacity.retry_if_exception(_retryable), reraise=True)
        try:
            return retrying(attempt), attempts
        except openai.APIStatusError as e:
            raise ModelError(f"model endpoint answered HTTP {e.status_code} after {attempts} attempt(s): "
                             f"{_server_message(e)}") from e
        except openai.APITimeoutError as e:
            raise ModelError(f"model endpoint {self.base_url} did not answer within {cfg.timeout_s:g}s "
                             f"({attempts} attempt(s))") from e
        except openai.APIConnectionError as e:
            cause = _one_line(str(e.__cause__ or e))
            raise ModelUnreachable(f"cannot reach the model endpoint at {self.base_url} "
                                   f"({attempts} attempt(s)): {cause}") from e
        except openai.OpenAIError as e:
            raise ModelError(f"model endpoint {self.base_url}: {_one_line(str(e))}") from e

    def _reply(self, response: ChatCompletion, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               duration_ms: float, attempts: int) -> ModelReply:
        choice = response.choices[0]
        msg = choice.message
        calls = []
        for tc in msg.tool_calls or []:
            fn = getattr(tc, "function", None)
            args = getattr(fn, "arguments", "")
            calls.append(ToolCall(id=tc.id or f"call_missing_{next(self._missing_ids)}",
                                  name=str(getattr(fn, "name", "") or ""),
                                  arguments_raw=args if isinstance(args, str) else json.dumps(args)))
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        if calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments_raw}}
                                     for c in calls]
        elif msg.content is None:
            message["content"] = ""
        usage = response.usage
        if usage is not None:
            tokens_in, tokens_out = usage.prompt_tokens or 0, usage.completion_tokens or 0
        else:
            tokens_in = estimate_tokens(messages) + math.ceil(len(json.dumps(tools)) / 4)
            tokens_out = estimate_tokens([message])
        model = response.model or self.config.model
        finish = choice.finish_reason
        return ModelReply(
            content=msg.content, tool_calls=calls, stop_raw=finish, stop=normalise_stop(finish, bool(calls)),
            tokens_in=tokens_in, tokens_out=tokens_out,
            cost_usd=price(self.config.prices, [model, self.config.model], tokens_in, tokens_out),
            duration_ms=duration_ms, model=model, message=message, tokens_estimated=usage is None,
            attempts=attempts)


def _retryable(error: BaseException) -> bool:
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.RateLimitError):
        return error.code != "insufficient_quota"  # out of credit: waiting will not help
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


def _retry_after(error: BaseException | None) -> float | None:
    """Seconds a 429/5xx asked us to wait (retry-after-ms, Retry-After seconds or HTTP date), if any."""
    if not isinstance(error, openai.APIStatusError):
        return None
    headers = error.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            pass
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    return None


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict) and body.get("message"):
        return _one_line(str(body["message"]))
    if isinstance(body, str) and body.strip():
        return _one_line(body)
    return _one_line(error.message)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
