"""Model settings: which model, where, how patiently, at what price; from the environment, validated once."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from patcher.errors import BadInput

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
    idle_timeout_s: float = Field(default=120.0, gt=0)
    """Longest silence while connecting, before the first byte of the answer (a local model on a CPU reads
    the whole prompt first) and between two chunks of a streamed reply (env PATCHER_MODEL_IDLE_TIMEOUT_S)."""
    reply_timeout_s: float = Field(default=900.0, gt=0)
    """Ceiling on one whole reply, however steadily it streams (env PATCHER_MODEL_REPLY_TIMEOUT_S)."""
    stream: bool = True
    """Stream replies (env PATCHER_MODEL_STREAM=0 for a server that cannot; then the reply deadline is the
    whole request's)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt: on 429, 5xx, and connections that failed before the server had the
    request; never after a deadline passed while it was answering."""
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
        """Settings from PATCHER_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY, PATCHER_MODEL_IDLE_TIMEOUT_S,
        PATCHER_MODEL_REPLY_TIMEOUT_S and PATCHER_MODEL_STREAM; overrides that are not None win.

        Raises BadInput with one line saying what is wrong.
        """
        env = os.environ if env is None else env
        names = {"model": "PATCHER_MODEL", "base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY",
                 "idle_timeout_s": "PATCHER_MODEL_IDLE_TIMEOUT_S", "reply_timeout_s": "PATCHER_MODEL_REPLY_TIMEOUT_S",
                 "stream": "PATCHER_MODEL_STREAM"}
        values: dict[str, Any] = {field: env.get(var) for field, var in names.items()}
        values = {k: v for k, v in values.items() if v} | {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls(**values)
        except ValidationError as e:
            problems = "; ".join(_describe(err, names) for err in e.errors())
            raise BadInput(f"model settings: {problems}") from e


def _describe(err: Any, names: Mapping[str, str]) -> str:
    where = ".".join(str(p) for p in err["loc"])
    where = names.get(where, where)
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
