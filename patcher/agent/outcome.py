"""How an agent run ended: what the loop returns and telemetry records (apart, so neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AgentResult:
    reason: str
    """'finished' when the model ended on its own, else a contract reason (round_limit, cut_off, …)."""
    message: str
    rounds: int = 0
    tool_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0
    final_text: str | None = None
    stops: list[str] = field(default_factory=list)
