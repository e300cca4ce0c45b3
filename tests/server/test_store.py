"""The durable job store on a real SQLite file: idempotency, atomic claims across threads and processes,
leases and recovery, cancel, reviews."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.server.store import IdempotencyConflict, Store, StoreConfig, UnknownJob, default_url

pytest_plugins = ["tests.support.store_helpers"]

SPEC = {"repo": "/srv/repos/calc", "traceback": "Traceback…\nZeroDivisionError: division by zero\n"}


def in_threads(target: Callable[[Store], None], stores: list[Store]) -> None:
    """`target(store)` in one thread per store, all started, then all joined."""
    threads = [threading.Thread(target=target, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_submit_get_and_persist_across_instances(store: Store, url: str) -> None:
    job, created = store.submit(SPEC)
    assert created and job.state == "queued" and job.attempts == 0 and job.result is None
    again = Store(StoreConfig(url=url))
    try:
        stored = again.get(job.id)
        assert stored is not None and stored.spec == SPEC and stored.created_at.tzinfo is not None
        assert again.get("nope") is None
    finally:
        again.close()


def test_idempotency_key(store: Store) -> None:
    first, created = store.submit(SPEC, idempotency_key="ci-run-41")
    second, created_again = store.submit(dict(SPEC), idempotency_key="ci-run-41")
    assert created and not created_again and second.id == first.id
    with pytest.raises(IdempotencyConflict, match="different request"):
        store.submit(SPEC | {"ref": "main"}, idempotency_key="ci-run-41")
    assert store.submit(SPEC)[0].id != store.submit(SPEC)[0].id  # no key: always a new job
    assert len(store.list_jobs()) == 3


def test_idempotency_key_under_concurrent_submits(store: Store, url: str) -> None:
    ids: list[str] = []
    stores = [Store(url) for _ in range(6)]

    def submit(s: Store) -> None:
        ids.append(s.submit(SPEC, idempotency_key="same")[0].id)

    in_threads(submit, stores)
    for s in stores:
        s.close()
    assert len(ids) == 6 and len(set(ids)) == 1
    assert len(store.list_jobs()) == 1


def test_claim_is_fifo_and_counts_attempts(store: Store) -> None:
    a, _ = store.submit(SPEC | {"n": 1})
    b, _ = store.submit(SPEC | {"n": 2})
    first = store.claim()
    assert first is not None and first.id == a.id and first.state == "running"
    assert first.attempts == 1 and first.token
    second = store.claim()
    assert second is not None and second.id == b.id and second.token != first.token
    assert store.claim() is None


CLAIMER = """
import sys, threading
from patcher.server.store import Store
store, out, lock = Store(sys.argv[1]), [], threading.Lock()
def claim():
    while (job := store.claim()) is not None:
        with lock:
            out.append(job.id)
threads = [threading.Thread(target=claim) for _ in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
print("\\n".join(out))
"""


def test_claims_are_atomic_across_threads_and_processes(store: Store, url: str) -> None:
    jobs = {store.submit(SPEC | {"n": i})[0].id for i in range(60)}
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, url], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    claimed: list[str] = []
    lock = threading.Lock()
    local = [Store(url) for _ in range(3)]

    def claim(s: Store) -> None:
        while (job := s.claim()) is not None:
            with lock:
                claimed.append(job.id)

    in_threads(claim, local)
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        claimed.extend(line for line in out.splitlines() if line)
    for s in local:
        s.close()
    assert sorted(claimed) == sorted(jobs)  # every job claimed, none twice
    assert {j.attempts for j in store.list_jobs(limit=100)} == {1}


def test_finish_records_the_outcome_and_respects_the_token(store: Store) -> None:
    store.submit(SPEC)
    job = store.claim()
    assert job is not None and job.token is not None
    assert store.finish(job.id, "not-my-token", {"status": "verified"}) is None
    assert store.finish(job.id, job.token, {"status": "verified"}) == "done"
    assert store.finish(job.id, job.token, {"status": "other"}) is None  # a claim finishes once
    done = store.get(job.id)
    assert done is not None and done.result == {"status": "verified"} and done.token is None
    store.submit(SPEC)
    failing = store.claim()
    assert failing is not None and failing.token is not None
    assert store.finish(failing.id, failing.token, error="RuntimeError: boom") == "failed"
    assert store.get(failing.id).error == "RuntimeError: boom"  # type: ignore[union-attr]


def test_cancel(store: Store) -> None:
    queued, _ = store.submit(SPEC)
    assert store.cancel(queued.id) == "cancelled"
    assert store.claim() is None  # a cancelled job never runs
    running_spec, _ = store.submit(SPEC | {"n": 2})
    running = store.claim()
    assert running is not None and running.token is not None and running.id == running_spec.id
    assert store.cancel(running.id) == "running"
    assert store.heartbeat([running.token]) == {running.token}  # its worker is told to stop
    assert store.finish(running.id, running.token, {"status": "error"}) == "cancelled"
    assert store.cancel(running.id) == "cancelled"  # terminal states stay as they are
    with pytest.raises(UnknownJob):
        store.cancel("nope")


def test_heartbeat_keeps_the_lease_and_recover_takes_lapsed_ones(store: Store) -> None:
    a, _ = store.submit(SPEC | {"n": 1})
    b, _ = store.submit(SPEC | {"n": 2})
    ja, jb = store.claim(), store.claim()
    assert ja is not None and jb is not None and ja.token and jb.token
    time.sleep(0.4)
    assert store.heartbeat([ja.token]) == set()
    assert store.recover(stale_after_s=0.3) == [(b.id, "queued")]  # a kept its lease, b lost it
    assert store.heartbeat([jb.token]) == {jb.token}  # b's old worker learns its claim is gone
    assert store.finish(b.id, jb.token, {"late": True}) is None
    requeued = store.get(b.id)
    assert requeued is not None and requeued.state == "queued" and "attempt 1 was interrupted" in str(requeued.error)
    again = store.claim()
    assert again is not None and again.id == b.id and again.attempts == 2
    assert store.recover(stale_after_s=0.0, max_attempts=2) == [(a.id, "queued"), (b.id, "failed")]
    failed = store.get(b.id)
    assert failed is not None and "2 attempts interrupted, not retried" in str(failed.error)


def test_recover_cancels_an_interrupted_job_that_was_cancelled(store: Store) -> None:
    job, _ = store.submit(SPEC)
    store.claim()
    store.cancel(job.id)
    assert store.recover(stale_after_s=0.0) == [(job.id, "cancelled")]


def test_reviews(store: Store) -> None:
    job, _ = store.submit(SPEC)
    store.add_review(job.id, "reject", who="bob", comment="needs a test")
    review = store.add_review(job.id, "approve", who="alice", comment="lgtm")
    assert review.when.tzinfo is not None
    assert [(r.decision, r.who, r.comment) for r in store.reviews(job.id)] == [
        ("reject", "bob", "needs a test"), ("approve", "alice", "lgtm")]
    with pytest.raises(BadInput, match="decision must be"):
        store.add_review(job.id, "maybe", who="carol")
    with pytest.raises(UnknownJob):
        store.add_review("nope", "approve", who="carol")


def test_list_jobs_filters_and_orders_newest_first(store: Store) -> None:
    ids = [store.submit(SPEC | {"n": i})[0].id for i in range(3)]
    store.cancel(ids[0])
    assert [j.id for j in store.list_jobs()] == ids[::-1]
    assert [j.id for j in store.list_jobs(state="queued")] == ids[:0:-1]
    assert [j.id for j in store.list_jobs(limit=1, offset=1)] == [ids[1]]


def test_default_url_is_under_patcher_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{tmp_path / 'home' / 'patcher.db'}"
