"""A job's trace as server-sent events, while it grows.

Each trace event becomes one SSE message: `id:` its seq, `event:` its type, `data:` the event as one JSON
line. A client that reconnects with `Last-Event-ID: N` gets the events after N, none twice and none
missing, because the trace is append-only and numbered. The stream ends after `run_end`; a job that
ended without one (it failed before its trace began, was cancelled while queued, or its attempts were
interrupted) ends the stream with one `event: end` message (no id) carrying its state and reason.

When a job is re-queued after a crash, its next attempt writes a new trace whose seq continues after the
last event of the attempts before; the stream is every attempt's trace in order, so ids never repeat and
resuming never skips.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .api_service import FINISHED, JobService

POLL_S = 0.2
KEEPALIVE_S = 15.0
CHUNK = 1 << 20


class TraceTail:
    """The complete lines a growing JSONL file gained since the last read (a torn last line waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.pending = b""

    def read(self) -> list[dict[str, Any]]:
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read(CHUNK)
        self.offset += len(chunk)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("seq"), int):
                events.append(event)
        return events


def message(event: dict[str, Any]) -> str:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))  # one line: newlines come escaped
    kind = "".join(ch for ch in str(event.get("type")) if ch.isalnum() or ch == "_")
    return f"id: {event['seq']}\nevent: {kind}\ndata: {data}\n\n"


def parse_last_id(header: str | None) -> int:
    try:
        return max(0, int(header or 0))
    except ValueError:
        return 0


async def stream(service: JobService, job_id: str, last_id: int = 0) -> AsyncIterator[str]:
    """SSE messages of the job's trace after event `last_id`, until the run ends."""
    yield "retry: 1000\n\n"
    tails: dict[Path, TraceTail] = {}
    sent = last_id
    quiet = 0.0
    while True:
        job = await asyncio.to_thread(service.get, job_id)
        events = []
        for path in await asyncio.to_thread(service.trace_files, job_id):
            events += tails.setdefault(path, TraceTail(path)).read()
        for event in events:
            if event["seq"] > sent:
                sent = event["seq"]
                yield message(event)
                if event.get("type") == "run_end":
                    return
        if job.state in FINISHED and not events:
            final = {"id": job.id, "state": job.state, "message": job.error or (job.result or {}).get("message")}
            yield f"event: end\ndata: {json.dumps(final)}\n\n"
            return
        if events:
            quiet = 0.0
            continue
        await asyncio.sleep(POLL_S)
        quiet += POLL_S
        if quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keepalive\n\n"
