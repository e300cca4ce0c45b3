"""The dispatcher: a thread on every node that claims due outbox rows (outboxdb.py) and works them in a small
pool of its own, so a slow or failing endpoint or forge never holds up a job or another endpoint.

- A webhook message: one signed attempt (delivery/webhooks.py), recorded whatever its answer; on a failure
  the next attempt waits the endpoint's next `retry_s`, and when those run out or its `window_s` would be
  passed the message is given up (failed).
- A delivery: the job's verified diff pushed and its pull request opened (delivery/run.py); done, or
  failed with why (redacted) until someone retries it from the job page or POST /v1/jobs/{id}/deliver.
  Either end is itself an event (job.delivered, job.failed).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from patcher.delivery import Commit, Facts, WebhookEndpoint, body_of, commit_message, deliver, forge_for, send
from patcher.errors import PatcherError
from patcher.intake import CloneLimits
from patcher.result import JobResult
from patcher.server.checks import check_repo
from patcher.server.crashdb import CrashGroupRow
from patcher.server.db import JobRow
from patcher.server.outbox import Outbox
from patcher.server.outboxdb import AttemptRow, DeliveryRow, MessageRow, claim, now
from patcher.server.projects import ProjectConfig
from patcher.trace import Redactor

log = logging.getLogger(__name__)
DELIVERY_LEASE_S = 900.0


class Dispatcher:
    def __init__(self, outbox: Outbox, poll_s: float = 0.5, threads: int = 4) -> None:
        self.outbox, self.settings, self.engine = outbox, outbox.settings, outbox.engine
        self.poll_s, self.threads = poll_s, threads
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None

    def start(self) -> None:
        self._stop.clear()
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="patcher-outbox")
        self._thread = threading.Thread(target=self._loop, name="patcher-dispatcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)  # a claimed row not started is taken up by lease
        self._thread = self._pool = None

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.dispatch()
            except Exception:  # a database hiccup: logged, tried again at the next poll
                log.exception("dispatching the outbox failed")

    def dispatch(self) -> None:
        """Claim what is due and hand it to the pool."""
        assert self._pool is not None
        with Session(self.engine) as s, s.begin():
            messages = [m.id for m in claim(s, MessageRow, 120.0, 2 * self.threads)]
            deliveries = [d.job_id for d in claim(s, DeliveryRow, DELIVERY_LEASE_S, 2)]
        for message_id in messages:
            self._pool.submit(self._guarded, self.send, message_id)
        for job_id in deliveries:
            self._pool.submit(self._guarded, self.deliver, job_id)

    @staticmethod
    def _guarded(work: Any, key: str) -> None:
        try:
            work(key)
        except Exception:  # the row stays claimed; its lease lapses and another try takes it up
            log.exception("outbox work on %s failed", key)

    # webhooks

    def send(self, message_id: str) -> None:
        with Session(self.engine) as s:
            message = s.get_one(MessageRow, message_id)
            event, endpoint_name, tries, created = message.event, message.endpoint, message.tries, message.created_at
        endpoint = next((w for w in self.settings.projects().webhooks if w.name == endpoint_name), None)
        if endpoint is None:
            return self._record(message_id, tries, None, "the endpoint is no longer configured", 0.0, final=True)
        attempt = send(endpoint, message_id, body_of(endpoint, event))
        self._record(message_id, tries, attempt.status, attempt.error, attempt.duration_ms, attempt.ok,
                     endpoint=endpoint, created=created)

    def _record(self, message_id: str, tries: int, status: int | None, error: str | None, duration_ms: float,
                ok: bool = False, final: bool = False, endpoint: WebhookEndpoint | None = None,
                created: Any = None) -> None:
        at = now()
        with Session(self.engine) as s, s.begin():
            message = s.get_one(MessageRow, message_id, with_for_update=True)
            s.add(AttemptRow(message_id=message_id, n=tries + 1, at=at, status=status, error=error,
                             duration_ms=duration_ms))
            message.tries, message.claimed_until = tries + 1, None
            waits = endpoint.retry_s if endpoint else []
            next_at = at + timedelta(seconds=waits[tries]) if tries < len(waits) else None
            closes = created + timedelta(seconds=endpoint.window_s) if endpoint and created else at
            if ok:
                message.state = "delivered"
            elif final or next_at is None or next_at > closes:
                message.state = "failed"
            else:
                message.state, message.next_at = "pending", next_at

    # deliveries

    def deliver(self, job_id: str) -> None:
        with Session(self.engine) as s:
            job = s.get_one(JobRow, job_id)
            group = s.scalar(select(CrashGroupRow).where(CrashGroupRow.job_id == job_id))
            project = self.settings.projects().by_name(group.project if group else None)
            about, stored, when = self.outbox.data(job, group, None), job.result, job.updated_at
        try:
            if project is None or project.delivery is None:
                raise PatcherError("the job's project no longer delivers pull requests (PATCHER_PROJECTS_FILE)")
            if stored is None:
                raise PatcherError("the job has no result to deliver")
            result = JobResult.from_json(stored)
            facts = _facts(job_id, result, about)
            done = self._deliver(project, Commit.of(job_id, result, commit_message(facts), when), facts)
        except Exception as e:  # shown on the job page and in the job.failed event, never lost
            if not isinstance(e, PatcherError):
                log.exception("delivery of job %s failed", job_id)
            return self._end(job_id, error=self._redact(f"{type(e).__name__}: {e}" if not isinstance(
                e, PatcherError) else str(e)))
        self._end(job_id, commit=done.commit, pull_request=done.pull_request.url)

    def _deliver(self, project: ProjectConfig, commit: Commit, facts: Facts) -> Any:
        config = project.delivery
        assert config is not None and config.remote is not None
        access = self.settings.git_access()
        pins = check_repo(self.settings, config.remote)  # the remote's addresses as checked now (no rebinding)
        limits = CloneLimits(timeout_s=config.timeout_s, access=access, resolve=pins)
        forge = forge_for(config, config.remote, access.tokens(), config.timeout_s)
        return deliver(commit, facts, config, limits, forge,
                       on_pushed=lambda sha: self._pushed(commit.job_id, sha))

    def _pushed(self, job_id: str, commit: str) -> None:
        with Session(self.engine) as s, s.begin():
            row = s.get_one(DeliveryRow, job_id, with_for_update=True)
            row.commit, row.pushed, row.updated_at = commit, True, now()

    def _end(self, job_id: str, commit: str | None = None, pull_request: str | None = None,
             error: str | None = None) -> None:
        with Session(self.engine) as s, s.begin():
            row = s.get_one(DeliveryRow, job_id, with_for_update=True)
            row.state = "failed" if error else "done"
            row.error, row.tries, row.claimed_until, row.updated_at = error, row.tries + 1, None, now()
            if pull_request:
                row.pull_request, row.commit = pull_request, commit
            job = s.get_one(JobRow, job_id)
            group = s.scalar(select(CrashGroupRow).where(CrashGroupRow.job_id == job_id))
            about = {"branch": f"patcher/{job_id}", "commit": row.commit, "pull_request": row.pull_request,
                     "error": error}
            self.outbox.emit(s, job, group, "job.failed" if error else "job.delivered", about)

    def _redact(self, text: str) -> str:
        access = self.settings.git_access()
        return Redactor([*access.secrets(), *self.settings.projects().secrets()]).text(access.redact(text))[:2000]


def _facts(job_id: str, result: JobResult, about: dict[str, Any]) -> Facts:
    """The job as its delivery tells of it: the result's verdict, and from the job's event (`about`,
    outbox.data) its links, its crash and its repository."""
    return Facts(job_id=job_id, review_link=about["links"]["job"], record_link=about["links"]["record"] or "",
                 status=result.status, reason=result.reason, message=result.message, diff_sha256=result.diff_sha256,
                 files_changed=list(result.files_changed), verification=result.verification, crash=about["crash"],
                 repo=about["repo"])
