"""Job events as webhooks signed by the Standard Webhooks scheme: a fixed body per message, sent with

    webhook-id: msg_…            the same on every attempt of one message (receivers deduplicate on it)
    webhook-timestamp: 1700000000    seconds, the attempt's (receivers refuse old ones: replay)
    webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body" under the secret's bytes>

The body is the event (`type`, `timestamp`, `data`: the job's summary and links), or with `format = "slack"`
a Slack-compatible message (`text`, `blocks`) of it, signed the same.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from patcher.delivery.config import WebhookEndpoint


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header of one attempt."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def body_of(endpoint: WebhookEndpoint, event: dict[str, Any]) -> bytes:
    """The bytes an endpoint gets for an event, in its format."""
    payload = slack_message(event) if endpoint.format == "slack" else event
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def slack_message(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data") or {}
    crash = data.get("crash") or {}
    what = crash.get("title") or data.get("message") or ""
    verb = str(event.get("type", "")).removeprefix("job.").replace("_", " ")
    link = (data.get("links") or {}).get("job", "")
    line = f"patcher: job {data.get('id')} {verb}" + (f" — {what}" if what else "")
    pull = (data.get("delivery") or {}).get("pull_request")
    text = _slack_escape(line) + (f" <{link}|review>" if link else "") + (f" <{pull}|pull request>" if pull else "")
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Attempt:
    status: int | None
    """The endpoint's HTTP status; None when no answer came."""
    error: str | None
    duration_ms: float

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def send(endpoint: WebhookEndpoint, message_id: str, body: bytes, now: float | None = None) -> Attempt:
    """One attempt: the signed POST, bounded by the endpoint's timeout; redirects are not followed."""
    stamp = int(now if now is not None else time.time())
    headers = {"content-type": "application/json", "user-agent": "patcher-webhooks/1",
               "webhook-id": message_id, "webhook-timestamp": str(stamp),
               "webhook-signature": signature(endpoint.secret.get_secret_value(), message_id, stamp, body)}
    started = time.monotonic()
    try:
        with httpx.Client(timeout=endpoint.timeout_s, follow_redirects=False) as client:
            r = client.post(endpoint.url, content=body, headers=headers)
        said = None if r.is_success else f"HTTP {r.status_code}: {r.text[:200]}"
        return Attempt(r.status_code, said, (time.monotonic() - started) * 1000)
    except httpx.HTTPError as e:
        return Attempt(None, f"{type(e).__name__}: {str(e)[:200]}", (time.monotonic() - started) * 1000)
