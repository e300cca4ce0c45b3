"""What a crash report's local variables say about where a bad value came from (crash intake passes the values a
Sentry SDK sent; they are text, never evaluated). A variable whose value is what the exception complains of is
the one to follow back: `None` for an error about NoneType, zero (or an empty container) for a division by
zero, a number for an index out of range, the missing key for a KeyError, an empty container for an error
about emptiness. Their assignments are then tried before the crash line's other sources (dataflow.py)."""

from __future__ import annotations

import re

from patcher.intake import ExceptionInfo

EMPTY = ("[]", "()", "{}", "''", '""', "set()", "b''")
NUMBER = re.compile(r"-?\d+")


def suspicious_names(variables: tuple[tuple[str, str], ...], exc: ExceptionInfo | None) -> list[str]:
    """The variables whose values match what the exception complains of, in the report's order."""
    if exc is None or not variables:
        return []
    kind, message = exc.type.rsplit(".", 1)[-1], exc.message.strip()
    return [name for name, value in variables if _matches(kind, message, value.strip())]


def _matches(kind: str, message: str, value: str) -> bool:
    if "NoneType" in message or (kind == "AttributeError" and "None" in message):
        return value == "None"
    if kind == "ZeroDivisionError":
        return value in ("0", "0.0", *EMPTY)
    if kind == "IndexError":
        return bool(NUMBER.fullmatch(value)) or value in EMPTY
    if kind == "KeyError":
        return bool(message) and value == message
    if "empty" in message.lower():
        return value in EMPTY
    return False
