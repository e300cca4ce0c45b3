"""The shared event log on SQLite and PostgreSQL: ids 1, 2, 3… per job across attempts, only while the
claim holds, readable from any process."""

from __future__ import annotations

import subprocess
import sys
import threading

from patcher.server.eventlog import EventLog
from patcher.server.store import Store

pytest_plugins = ["tests.store_helpers"]

SPEC = {"repo": "/srv/repos/calc", "traceback": "Traceback…\nZeroDivisionError: division by zero\n"}


def event(seq: int, kind: str = "verify") -> dict[str, object]:
    return {"run_id": "r", "seq": seq, "type": kind}


def test_ids_continue_across_a_recovered_attempt_and_a_lost_claim_writes_nothing(store: Store, url: str) -> None:
    log = EventLog(store.engine)
    job, _ = store.submit(SPEC)
    first = store.claim()
    assert first is not None and first.token is not None
    assert all(log.append(job.id, first.token, 1, event(n, "run_start" if n == 1 else "verify")) for n in (1, 2, 3))
    assert store.recover(0.0) == [(job.id, "queued")]  # the worker is taken for dead
    assert not log.append(job.id, first.token, 1, event(4)), "a lost claim must not interleave"
    second = store.claim()
    assert second is not None and second.token is not None and second.attempts == 2
    assert log.append(job.id, second.token, 2, event(1, "run_start"))
    assert log.append(job.id, second.token, 2, event(2, "run_end"))
    other = Store(url)  # another node reads the same rows
    try:
        rows = EventLog(other.engine).after(job.id)
    finally:
        other.close()
    assert [n for n, _ in rows] == [1, 2, 3, 4, 5]
    assert [(e["job_attempt"], e["seq"], e["type"]) for _, e in rows] == [
        (1, 1, "run_start"), (1, 2, "verify"), (1, 3, "verify"), (2, 1, "run_start"), (2, 2, "run_end")]
    assert [n for n, _ in log.after(job.id, 3)] == [4, 5]


def test_concurrent_writers_of_different_jobs_keep_each_job_contiguous(store: Store) -> None:
    log = EventLog(store.engine)
    jobs = [store.submit({**SPEC, "n": n})[0] for n in range(4)]
    claimed = [store.claim() for _ in jobs]

    def write(job_id: str, token: str) -> None:
        for seq in range(1, 26):
            assert log.append(job_id, token, 1, event(seq))

    threads = [threading.Thread(target=write, args=(c.id, c.token)) for c in claimed if c and c.token]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for job in jobs:
        rows = log.after(job.id)
        assert [n for n, _ in rows] == list(range(1, 26))
        assert [e["seq"] for _, e in rows] == list(range(1, 26))


def test_many_processes_starting_on_one_new_database_all_come_up(url: str) -> None:
    code = ("import sys; from patcher.server.store import Store; from patcher.server.eventlog import EventLog; "
            "s = Store(sys.argv[1]); EventLog(s.engine); s.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate(timeout=120)[1].decode()[-500:] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
