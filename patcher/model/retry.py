"""How a failed model request is answered: sent again (a connection refused or reset, a connect timeout, 429,
5xx; with the server's Retry-After when it gives one) or ended, in words that name the deadline or the status."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import TypeVar

import openai
import tenacity

from patcher.errors import ModelError, ModelUnreachable
from patcher.model.config import ModelConfig

T = TypeVar("T")


def call_with_retries(fn: Callable[[], T], cfg: ModelConfig, base_url: str) -> tuple[T, int]:
    """`fn()` and the attempts it took: retried only where the server cannot be answering it still (see the
    module docstring of client.py); every other failure ends the job as ModelError or ModelUnreachable."""
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
        if _before_the_request(e):
            raise ModelUnreachable(f"cannot reach the model endpoint at {base_url} within "
                                   f"{cfg.idle_timeout_s:g}s ({attempts} attempt(s))") from e
        if cfg.stream:
            raise ModelError(f"model endpoint {base_url} took the request but sent nothing for "
                             f"{cfg.idle_timeout_s:g}s (the idle deadline, PATCHER_MODEL_IDLE_TIMEOUT_S); "
                             "not sent again, since it may still be answering") from e
        raise ModelError(f"model endpoint {base_url} did not answer within {cfg.reply_timeout_s:g}s "
                         "(the reply deadline, PATCHER_MODEL_REPLY_TIMEOUT_S; streaming is off)") from e
    except openai.APIConnectionError as e:
        cause = _one_line(str(e.__cause__ or e))
        raise ModelUnreachable(f"cannot reach the model endpoint at {base_url} "
                               f"({attempts} attempt(s)): {cause}") from e
    except openai.OpenAIError as e:
        raise ModelError(f"model endpoint {base_url}: {_one_line(str(e))}") from e


def _before_the_request(error: openai.APITimeoutError) -> bool:
    """A timeout before the server had the whole request (connecting, or sending it); by the name of the HTTP
    library's exception, since the client's library is its own (httpx or a fork)."""
    return type(error.__cause__).__name__ in ("ConnectTimeout", "PoolTimeout", "WriteTimeout")


def _retryable(error: BaseException) -> bool:
    if isinstance(error, openai.APITimeoutError):  # waiting for the answer: the server may be generating it
        return _before_the_request(error)
    if isinstance(error, openai.APIConnectionError):  # refused or reset before any byte of an answer
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
