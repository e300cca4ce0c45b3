"""A job's trace as server-sent events, while it grows, from the shared event log (any node, any worker).

Each trace event becomes one SSE message: `id:` its number in the job (eventlog.py: 1, 2, 3… across
attempts), `event:` its type, `data:` the event as one JSON line (with its `seq` within the attempt and
the `attempt`). A client that reconnects with `Last-Event-ID: N` gets the events after N, none twice and
none missing, also when a crashed worker's job was re-queued in between. The stream ends after `run_end`;
a job that ended without one (it failed before its trace began, was cancelled while queued, or its
attempts were interrupted) ends the stream with one `event: end` message (no id) with its state.

The log is polled: every POLL_S while events come, backing off to QUIET_POLL_S when none do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from patcher.server.service import FINISHED, JobService

POLL_S = 0.1
QUIET_POLL_S = 1.0
KEEPALIVE_S = 15.0


def message(event_id: int, event: dict[str, Any]) -> str:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))  # one line: newlines come escaped
    kind = "".join(ch for ch in str(event.get("type")) if ch.isalnum() or ch == "_")
    return f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n"


def parse_last_id(header: str | None) -> int:
    try:
        return max(0, int(header or 0))
    except ValueError:
        return 0


async def stream(service: JobService, job_id: str, last_id: int = 0) -> AsyncIterator[str]:
    """SSE messages of the job's events after event `last_id`, until the run ends."""
    yield "retry: 1000\n\n"
    sent, wait, quiet = last_id, POLL_S, 0.0
    while True:
        job = await asyncio.to_thread(service.get, job_id)  # before reading: no event can slip past the end
        events = await asyncio.to_thread(service.events.after, job_id, sent)
        for event_id, event in events:
            sent = event_id
            yield message(event_id, event)
            if event.get("type") == "run_end":
                return
        if events:
            wait, quiet = POLL_S, 0.0
            continue
        if job.state in FINISHED:
            final = {"id": job.id, "state": job.state, "message": job.error or (job.result or {}).get("message")}
            yield f"event: end\ndata: {json.dumps(final)}\n\n"
            return
        await asyncio.sleep(wait)
        quiet += wait
        wait = min(wait * 2, QUIET_POLL_S)
        if quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keepalive\n\n"
