"""Secrets out of what an event carries before anything keeps it: the trace's Redactor (values under keys named
like credentials at any depth, the server's own secrets, URL userinfo) plus the shapes of well-known tokens,
wherever they appear (a local variable with an innocent name, a line of source, an exception message)."""

from __future__ import annotations

import re
from typing import Any

from patcher.trace import Redactor

REDACTED = "[REDACTED]"
TOKEN_SHAPES = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b(?:sk|rk|pk)-(?:[A-Za-z0-9_-]{2,}-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{16,}|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bwhsec_[A-Za-z0-9+/=]{16,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    re.DOTALL)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]|\x1b\[[0-9;?]*[A-Za-z]?")


class Scrubber:
    """One per event: the Redactor of the server's environment, and the token shapes."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()

    def text(self, value: str, limit: int) -> str:
        """One line of event text: control characters out, secrets out, at most `limit` characters."""
        clean = CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))
        clean = TOKEN_SHAPES.sub(REDACTED, self.redactor.text(clean))
        return clean if len(clean) <= limit else clean[: limit - 1] + "…"

    def variables(self, values: dict[str, Any]) -> dict[str, Any]:
        """Local variables with the values under credential-like names redacted, at any depth."""
        return dict(self.redactor(values))
