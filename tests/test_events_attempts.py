"""Events stay ordered across a crash: the server is killed while a job runs, the job is re-queued, and the
stream's event ids (the shared event log's numbering) go on across the attempts, so the stream (also
resumed with Last-Event-ID) neither skips nor repeats. The job hangs in a clone from a loopback server
that never answers, so no Docker."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

from patcher.trace import read_events
from tests.test_api import PRODUCTION_TB, ApiServer, read_sse


def test_a_re_queued_attempt_continues_the_event_ids(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        srv = ApiServer(tmp_path, "http://127.0.0.1:9", PATCHER_ALLOW_PRIVATE_HOSTS="1",
                        PATCHER_CLONE_TIMEOUT_S="4").start()
        try:
            with srv.client() as c:
                body = {"repo": f"git://127.0.0.1:{silent.getsockname()[1]}/x", "traceback": PRODUCTION_TB}
                job_id = c.post("/v1/jobs", json=body).json()["id"]
            jobs = tmp_path / "home" / "jobs" / job_id
            with srv.client() as c:  # its first event is in the shared log (the trace file gets it a moment before)
                assert read_sse(c, f"/v1/jobs/{job_id}/events", stop_after=1), srv.log()
            srv.stop(signal.SIGKILL)  # attempt 1 is hanging in the clone
            srv.start()
            result = srv.wait(job_id, timeout=60)
            with srv.client() as c:
                whole = read_sse(c, f"/v1/jobs/{job_id}/events")
                resumed = read_sse(c, f"/v1/jobs/{job_id}/events", last_id=1)
        finally:
            srv.stop()
    assert result["reason"] == "bad_input" and "longer than 4 s" in result["message"], result
    traces = sorted((read_events(p) for p in jobs.glob("*.jsonl")), key=lambda events: events[0]["ts"])
    assert len(traces) == 2 and traces[0][0]["seq"] == traces[1][0]["seq"] == 1, "each attempt's own trace"
    ids = [int(m["id"]) for m in whole]
    assert ids == list(range(1, len(ids) + 1)) and whole[-1]["event"] == "run_end", "the stream's ids go on"
    streamed = [json.loads(m["data"]) for m in whole]
    assert [e.pop("job_attempt") for e in streamed] == [1] * len(traces[0]) + [2] * len(traces[1])
    assert streamed == [e for t in traces for e in t], "every attempt, in order"
    assert [int(m["id"]) for m in resumed] == ids[1:]
