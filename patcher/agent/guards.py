"""Limits checked in code before each model call and after each tool call. Each stop names a contract reason."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from patcher.trace import call_key


class Limits(BaseModel):
    """When an agent run must stop, whatever the model wants."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(default=30, ge=1, description="Model calls allowed in one run.")
    max_cost_usd: float | None = Field(default=None, gt=0, description="Spend allowed; None means no cost limit.")
    timeout_s: float = Field(default=900.0, gt=0, description="Wall-clock seconds allowed for the agent phase.")
    repeat_limit: int = Field(default=3, ge=2, description="The Nth same call with an unchanged result stops the run.")
    context_tokens: int = Field(default=48_000, ge=2_000, description="Estimated prompt size kept under.")


_VOLATILE = (
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|us|µs|ns|sec|secs|seconds)\b"), "<duration>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<address>"),
    (re.compile(r"/tmp/[^\s:'\"),\]]+"), "/tmp/<path>"),
)
REPEAT_NOTE = ("note: this call and its result are the same as last time ({count} of {limit}); the same call "
               "again with no change in between ends the run. Change the code, look somewhere else, or stop "
               "and say why.")


def normalized(result: str) -> str:
    """A result with its volatile parts (durations, memory addresses, temporary paths) made constant."""
    for pattern, stand_in in _VOLATILE:
        result = pattern.sub(stand_in, result)
    return result


@dataclass
class Guards:
    limits: Limits
    started: float = field(default_factory=time.monotonic)
    cost_usd: float = 0.0
    cost_known: bool = True
    _seen: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def deadline(self) -> float:
        """When the wall clock runs out (time.monotonic); it also bounds a model or tool call in progress."""
        return self.started + self.limits.timeout_s

    def before_model_call(self, rounds_done: int) -> tuple[str, str] | None:
        """(reason, message) when the run must stop before asking the model again."""
        if rounds_done >= self.limits.max_rounds:
            return "round_limit", f"stopped after {rounds_done} rounds (limit {self.limits.max_rounds})"
        if self.limits.max_cost_usd is not None and self.cost_usd >= self.limits.max_cost_usd:
            return "budget_exceeded", f"spent ${self.cost_usd:.4f} of ${self.limits.max_cost_usd:.4f}"
        elapsed = time.monotonic() - self.started
        if elapsed >= self.limits.timeout_s:
            return "timeout", f"agent ran {elapsed:.0f} s (limit {self.limits.timeout_s:.0f} s)"
        return None

    def add_cost(self, cost: float | None) -> None:
        if cost is None:
            self.cost_known = False
        else:
            self.cost_usd += cost

    def after_tool_call(self, tool: str, args: Any, result: str) -> tuple[str, str] | None:
        """A repeat is the same call returning the same result (timings aside); a changed result is polling."""
        key = call_key(tool, args)
        digest = hashlib.sha256(normalized(result).encode()).hexdigest()
        last_digest, count = self._seen.get(key, ("", 0))
        count = count + 1 if digest == last_digest else 1
        self._seen[key] = (digest, count)
        if count >= self.limits.repeat_limit:
            return "repeated_call", f"{tool} was called {count} times with the same arguments and the same result"
        return None

    def repeat_note(self, tool: str, args: Any) -> str | None:
        """For the last repeat the guard still lets through: say so, and what to do instead."""
        count = self._seen.get(call_key(tool, args), ("", 0))[1]
        if count >= 2 and count == self.limits.repeat_limit - 1:
            return REPEAT_NOTE.format(count=count, limit=self.limits.repeat_limit)
        return None
