"""A bounded pool of worker threads that runs queued jobs from the store.

Each worker claims a job atomically, calls `runner(spec, job_id) -> result` (in production
`JobService.run`, which imports the pipeline only when a job runs), and records the result; a runner
that raises fails its job with the error. A housekeeping thread extends the leases of running jobs,
raises the cooperative cancel flag of a job cancelled from elsewhere (or whose claim was lost), and
recovers jobs whose worker vanished: re-queued, or failed with a reason once `max_attempts` runs were
interrupted (`Store.recover`). So after a crash no job is lost or stuck "running".

    with WorkerPool(store, runner, PoolConfig(workers=2)) as pool:
        job, _ = store.submit(spec); pool.notify()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import SQLAlchemyError

from patcher.server.store import Store

Runner = Callable[[dict[str, Any], str], dict[str, Any]]
log = logging.getLogger(__name__)


class PoolConfig(BaseModel):
    """How many jobs run at once and how a lost worker is noticed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    workers: int = Field(default=2, ge=0)
    """Jobs that run at the same time (threads); 0 runs none here, only the lease housekeeping."""
    poll_s: float = Field(default=1.0, gt=0)
    """How long an idle worker waits before looking for queued jobs again (`notify` wakes it sooner)."""
    lease_s: float = Field(default=30.0, gt=0)
    """A running job whose heartbeat is older than this has lost its worker; heartbeats come every third of it."""
    cancel_poll_s: float = Field(default=1.0, gt=0)
    """How often a cancel recorded by another process (an API node) is looked for, between heartbeats."""
    max_attempts: int = Field(default=2, ge=1)
    """Runs of one job that may be interrupted; after that it is failed with a reason instead of re-queued."""
    exclusive: bool = False
    """This pool is the only one using the database: at start every running job is taken as interrupted
    at once, without waiting for its lease to lapse. Leave False when several processes share the store."""


class WorkerPool:
    """Threads that run the store's queued jobs; start() recovers what a crashed process left running."""

    def __init__(self, store: Store, runner: Runner, config: PoolConfig | None = None) -> None:
        self.store = store
        self.runner = runner
        self.config = config or PoolConfig()
        self._stop = threading.Event()
        self._stop_housekeeping = threading.Event()
        self._wake = threading.Condition()
        self._lock = threading.Lock()
        self._running: dict[str, tuple[str, threading.Event]] = {}
        """job id -> (claim token, cooperative cancel flag)"""
        self._threads: list[threading.Thread] = []
        self._housekeeper: threading.Thread | None = None

    def start(self) -> list[tuple[str, str]]:
        """Recover interrupted jobs, then start the workers; returns (job id, new state) of those recovered."""
        if self._threads:
            raise RuntimeError("the pool is already started")
        cfg = self.config
        recovered = self.store.recover(0.0 if cfg.exclusive else cfg.lease_s, cfg.max_attempts)
        self._stop.clear()
        self._stop_housekeeping.clear()
        self._threads = [threading.Thread(target=self._work, name=f"patcher-worker-{i}", daemon=True)
                         for i in range(cfg.workers)]
        self._housekeeper = threading.Thread(target=self._housekeep, name="patcher-housekeeper", daemon=True)
        for t in [*self._threads, self._housekeeper]:
            t.start()
        return recovered

    def stop(self, timeout: float | None = None) -> None:
        """Take no new jobs; wait up to `timeout` for the running ones. Jobs still running stay claimed
        and are recovered by the next pool once their lease lapses."""
        self._stop.set()
        self.notify()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        self._stop_housekeeping.set()  # only now: the leases of jobs still finishing stay fresh until here
        if self._housekeeper is not None:
            self._housekeeper.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        self._threads, self._housekeeper = [], None

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def notify(self) -> None:
        """Wake idle workers (after a submit) instead of letting them wait out `poll_s`."""
        with self._wake:
            self._wake.notify_all()

    def cancel(self, job_id: str) -> str:
        """Cancel a queued job, or ask a running one to stop; returns the job's state after."""
        state = self.store.cancel(job_id)
        with self._lock:
            held = self._running.get(job_id)
        if held is not None:
            held[1].set()
        return state

    def stop_requested(self, job_id: str) -> bool:
        """The cooperative cancel flag a runner polls: True once its job was cancelled or its claim lost."""
        with self._lock:
            held = self._running.get(job_id)
        return held is not None and held[1].is_set()

    def flag(self, job_id: str) -> threading.Event:
        """The cancel flag of a running job, to hand to `run_job` (a fresh, never-raised one otherwise)."""
        with self._lock:
            held = self._running.get(job_id)
        return held[1] if held is not None else threading.Event()

    def running(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                job = self.store.claim()
            except SQLAlchemyError:
                log.exception("claiming a job failed; retrying")
                job = None
            if job is None:
                with self._wake:
                    if not self._stop.is_set():
                        self._wake.wait(self.config.poll_s)
                continue
            assert job.token is not None
            self._run(job.id, job.token, job.spec)

    def _run(self, job_id: str, token: str, spec: dict[str, Any]) -> None:
        with self._lock:
            self._running[job_id] = (token, threading.Event())
        result: dict[str, Any] | None = None
        error: str | None = None
        try:
            result = self.runner(spec, job_id)
            if not isinstance(result, dict):
                result, error = None, f"the runner returned {type(result).__name__}, not a result object"
        except Exception as e:  # the job's failure, recorded on the job (and logged), never the pool's
            log.exception("job %s failed", job_id)
            error = f"{type(e).__name__}: {e}"
        finally:
            with self._lock:
                del self._running[job_id]
        state: str | None = None
        for delay in (0.5, 2.0, 5.0, None):  # the result must not be lost to a briefly busy database
            try:
                state = self.store.finish(job_id, token, result, error)
                break
            except SQLAlchemyError:
                log.exception("recording job %s failed", job_id)
                if delay is None:
                    return
                time.sleep(delay)
        if state is None:
            log.warning("job %s finished after its claim was lost; the result of this attempt is dropped", job_id)

    def _housekeep(self) -> None:
        beat = self.config.lease_s / 3
        next_beat = time.monotonic() + beat
        next_recovery = time.monotonic() + self.config.lease_s
        while not self._stop_housekeeping.wait(min(beat, self.config.cancel_poll_s)):
            try:
                with self._lock:
                    held = {token: (job_id, flag) for job_id, (token, flag) in self._running.items()}
                if time.monotonic() >= next_beat:
                    stop, next_beat = self.store.heartbeat(held), time.monotonic() + beat
                else:  # a cancel from another process reaches a running job within cancel_poll_s
                    stop = self.store.stopping(held)
                for token in stop:
                    held[token][1].set()
                if time.monotonic() >= next_recovery:
                    for job_id, state in self.store.recover(self.config.lease_s, self.config.max_attempts):
                        log.warning("job %s lost its worker; now %s", job_id, state)
                    next_recovery = time.monotonic() + self.config.lease_s
            except SQLAlchemyError:
                log.exception("heartbeat failed; retrying")
