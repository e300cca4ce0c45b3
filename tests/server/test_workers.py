"""The worker pool over a real SQLite file; crashes are real processes killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from patcher.server.store import Store, StoredJob
from patcher.server.workers import PoolConfig, WorkerPool

pytest_plugins = ["tests.support.store_helpers"]

SPEC = {"repo": "/srv/repos/calc", "traceback": "ZeroDivisionError: division by zero\n"}
FAST = PoolConfig(workers=2, poll_s=0.05, lease_s=0.6)


def wait_for(store: Store, job_id: str, done: Callable[[StoredJob], bool], timeout: float = 30.0) -> StoredJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = store.get(job_id)
        if job is not None and done(job):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} is still {store.get(job_id)}")


def finished(job: StoredJob) -> bool:
    return job.state in ("done", "failed", "cancelled")


def echo(spec: dict[str, Any], job_id: str) -> dict[str, Any]:
    return {"status": "verified", "job": job_id, "n": spec.get("n")}


def test_runs_jobs_and_records_results(store: Store) -> None:
    jobs = [store.submit(SPEC | {"n": i})[0] for i in range(4)]
    with WorkerPool(store, echo, FAST) as pool:
        pool.notify()
        results = [wait_for(store, j.id, finished) for j in jobs]
    assert [(r.state, r.result) for r in results] == [
        ("done", {"status": "verified", "job": j.id, "n": i}) for i, j in enumerate(jobs)]


def test_bounded_concurrency(store: Store) -> None:
    lock, active, peak = threading.Lock(), [0], [0]

    def slow(spec: dict[str, Any], job_id: str) -> dict[str, Any]:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return {}

    jobs = [store.submit(SPEC | {"n": i})[0] for i in range(6)]
    with WorkerPool(store, slow, FAST):
        for j in jobs:
            wait_for(store, j.id, finished)
    assert peak[0] == 2


def test_runner_failure_fails_the_job_not_the_pool(store: Store) -> None:
    def flaky(spec: dict[str, Any], job_id: str) -> dict[str, Any]:
        if spec["n"] == 0:
            raise RuntimeError("docker went away")
        return {"ok": True}

    bad, good = store.submit(SPEC | {"n": 0})[0], store.submit(SPEC | {"n": 1})[0]
    with WorkerPool(store, flaky, PoolConfig(workers=1, poll_s=0.05, lease_s=0.6)):
        failed = wait_for(store, bad.id, finished)
        assert wait_for(store, good.id, finished).state == "done"
    assert failed.state == "failed" and failed.error == "RuntimeError: docker went away" and failed.result is None


def cooperative(pool_ref: list[WorkerPool], started: threading.Event) -> Callable[[dict[str, Any], str], dict]:
    def runner(spec: dict[str, Any], job_id: str) -> dict[str, Any]:
        started.set()
        deadline = time.monotonic() + 20
        while not pool_ref[0].stop_requested(job_id) and time.monotonic() < deadline:
            time.sleep(0.02)
        return {"status": "error", "stopped": pool_ref[0].stop_requested(job_id)}
    return runner


@pytest.mark.parametrize("via", ["pool", "store"])
def test_cancel_running_job(store: Store, via: str) -> None:
    pool_ref: list[WorkerPool] = []
    started = threading.Event()
    pool = WorkerPool(store, cooperative(pool_ref, started), PoolConfig(workers=1, poll_s=0.05, lease_s=0.3))
    pool_ref.append(pool)
    job, _ = store.submit(SPEC)
    queued, _ = store.submit(SPEC | {"n": 2})
    with pool:
        assert started.wait(10)
        assert pool.cancel(queued.id) == "cancelled"
        # "store": another process (an API server) cancels; the pool looks for it every cancel_poll_s
        assert (pool.cancel(job.id) if via == "pool" else store.cancel(job.id)) == "running"
        cancelled = wait_for(store, job.id, finished, timeout=10)
    assert cancelled.state == "cancelled" and cancelled.result == {"status": "error", "stopped": True}
    assert store.get(queued.id).state == "cancelled"  # type: ignore[union-attr]


CRASHER = """
import sys, time
from patcher.server.workers import PoolConfig, WorkerPool
from patcher.server.store import Store
def runner(spec, job_id):
    print("RUNNING", job_id, flush=True)
    time.sleep(3600)
WorkerPool(Store(sys.argv[1]), runner, PoolConfig(workers=1, poll_s=0.05, lease_s=float(sys.argv[2]))).start()
time.sleep(3600)
"""


def run_and_kill(url: str, job_id: str, also: Callable[[], None] = lambda: None, lease_s: float = 0.6) -> None:
    """A real process claims the job, starts running it, and is SIGKILLed mid-run."""
    proc = subprocess.Popen([sys.executable, "-c", CRASHER, url, str(lease_s)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == ["RUNNING", job_id]
        also()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_restart_requeues_an_interrupted_job_once(store: Store, url: str) -> None:
    job, _ = store.submit(SPEC)
    run_and_kill(url, job.id)
    crashed = store.get(job.id)
    assert crashed is not None and crashed.state == "running" and crashed.attempts == 1
    pool = WorkerPool(store, echo, FAST.model_copy(update={"exclusive": True}))
    try:
        assert pool.start() == [(job.id, "queued")]
        done = wait_for(store, job.id, finished)
    finally:
        pool.stop()
    assert done.state == "done" and done.attempts == 2 and done.error is None
    assert done.result == {"status": "verified", "job": job.id, "n": None}


def test_second_crash_fails_the_job_with_a_reason(store: Store, url: str) -> None:
    job, _ = store.submit(SPEC)
    run_and_kill(url, job.id)
    assert store.recover(stale_after_s=0.0) == [(job.id, "queued")]
    run_and_kill(url, job.id)
    pool = WorkerPool(store, echo, FAST.model_copy(update={"exclusive": True}))
    try:
        assert pool.start() == [(job.id, "failed")]
    finally:
        pool.stop()
    failed = store.get(job.id)
    assert failed is not None and failed.state == "failed" and failed.attempts == 2
    assert failed.error == ("attempt 2 was interrupted (its worker crashed or stopped); "
                            "2 attempts interrupted, not retried")


def test_live_lease_is_respected_and_a_lapsed_one_recovered(store: Store, url: str) -> None:
    job, _ = store.submit(SPEC)
    # shares the database, so waits for leases to lapse; leases long enough for a loaded 2-core machine
    pool = WorkerPool(store, echo, FAST.model_copy(update={"lease_s": 2.0}))

    def while_alive() -> None:
        assert pool.start() == []  # the other process still beats: its job is not taken
        time.sleep(3.0)  # longer than the lease: only the heartbeats keep it
        still = store.get(job.id)
        assert still is not None and still.state == "running" and still.attempts == 1

    try:
        run_and_kill(url, job.id, while_alive, lease_s=2.0)
        done = wait_for(store, job.id, finished, timeout=15)  # the housekeeper notices the lapse
    finally:
        pool.stop()
    assert done.state == "done" and done.attempts == 2


def test_stop_waits_for_running_jobs(store: Store) -> None:
    started = threading.Event()

    def slowish(spec: dict[str, Any], job_id: str) -> dict[str, Any]:
        started.set()
        time.sleep(0.5)
        return {"ok": True}

    job, _ = store.submit(SPEC)
    pool = WorkerPool(store, slowish, FAST)
    pool.start()
    assert started.wait(10)
    pool.stop()
    assert store.get(job.id).state == "done"  # type: ignore[union-attr]
    assert pool.running() == []


def test_the_pool_does_not_import_the_pipeline() -> None:
    code = "import sys, patcher.server.workers; assert 'patcher.pipeline' not in sys.modules, 'imported at import time'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_cancel_from_another_process_reaches_the_job_between_heartbeats(store: Store) -> None:
    pool_ref: list[WorkerPool] = []
    started = threading.Event()
    pool = WorkerPool(store, cooperative(pool_ref, started), PoolConfig(workers=1, poll_s=0.05, lease_s=60,
                                                                        cancel_poll_s=0.2))
    pool_ref.append(pool)
    job, _ = store.submit(SPEC)
    with pool:
        assert started.wait(10)
        begun = time.monotonic()
        other = Store(store.url)  # another connection, as another node would have
        assert other.cancel(job.id) == "running"
        other.close()
        cancelled = wait_for(store, job.id, finished, timeout=10)
        took = time.monotonic() - begun
    assert cancelled.state == "cancelled" and took < 2, took  # the heartbeat alone would take 20 s
