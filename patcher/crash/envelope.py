"""The Sentry envelope (`POST /api/{project}/envelope/`) and the older store body (`/store/`), read into an event.

An envelope is a JSON header line, then items: each a JSON header line (`type`, optional `length`) and a
payload of `length` bytes, or up to the next newline without one. Only the `event` item matters here (one
per envelope); sessions, transactions, client reports and attachments are skipped unread. Anything that
does not parse is refused whole (BadEvent), so a malformed request stores nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from patcher.crash.body import BadEvent

EVENT_ID = re.compile(r"[0-9a-f]{32}")
MAX_ITEMS = 100


def event_of_envelope(data: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """(the envelope's event id, its event item as a dict, None when it has none)."""
    header, at = _line(data, 0)
    head = _json(header, "the envelope header")
    event: dict[str, Any] | None = None
    for _ in range(MAX_ITEMS):
        if at >= len(data) or not data[at:].strip():
            break
        item_line, at = _line(data, at)
        if not item_line.strip():
            continue
        item = _json(item_line, "an item header")
        payload, at = _payload(data, at, item.get("length"))
        if item.get("type") == "event":
            if event is not None:
                raise BadEvent("the envelope holds more than one event")
            event = _json(payload, "the event")
    else:
        raise BadEvent(f"the envelope holds more than {MAX_ITEMS} items")
    event_id = head.get("event_id")
    return (event_id_of(event_id) if event_id is not None else None), event


def event_of_store(data: bytes) -> dict[str, Any]:
    """The event of a `/store/` body: one JSON object."""
    return _json(data, "the event")


def event_id_of(value: object) -> str:
    """A Sentry event id: 32 hex digits (UUID dashes dropped), lower case; BadEvent otherwise."""
    text = str(value).replace("-", "").lower() if isinstance(value, str) else ""
    if not EVENT_ID.fullmatch(text):
        raise BadEvent("event_id must be 32 hexadecimal digits")
    return text


def _line(data: bytes, at: int) -> tuple[bytes, int]:
    end = data.find(b"\n", at)
    return (data[at:], len(data)) if end < 0 else (data[at:end], end + 1)


def _payload(data: bytes, at: int, length: object) -> tuple[bytes, int]:
    if length is None:
        return _line(data, at)
    if not isinstance(length, int) or isinstance(length, bool) or length < 0 or at + length > len(data):
        raise BadEvent("an item's length does not fit the envelope")
    end = at + length
    return data[at:end], end + 1 if data[end : end + 1] == b"\n" else end


def _json(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise BadEvent(f"{what} is not JSON: {str(e)[:200]}") from None
    if not isinstance(value, dict):
        raise BadEvent(f"{what} is not a JSON object")
    return value


def sentry_key(auth_header: str | None, query_key: str | None) -> str | None:
    """The DSN's public key a request carries: `X-Sentry-Auth: Sentry sentry_key=…, …` or `?sentry_key=…`."""
    if auth_header:
        scheme, _, fields = auth_header.strip().partition(" ")
        if scheme.lower() == "sentry":
            for part in fields.split(","):
                name, _, value = part.strip().partition("=")
                if name.strip() == "sentry_key" and value.strip():
                    return value.strip()
    return query_key.strip() if query_key and query_key.strip() else None
