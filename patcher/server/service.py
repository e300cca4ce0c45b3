"""What the HTTP routes and the review pages call: one object over the store, the worker pool and the signer.

Each route is a few lines over one method here; errors are raised as the exceptions of errors.py and become
HTTP codes only in `app.py`.

A job's events are rows of the shared event log (eventlog.py), so any node streams and shows any job; the
worker that runs an attempt also keeps its trace file in its own HOME/jobs/<id>/, where the API node
keeps `attestation.json`, the signed record, signed again when a review is recorded.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from patcher.errors import BadInput
from patcher.intake import CloneLimits
from patcher.request import JobRequest, job_spec
from patcher.review import Approval, AttestConfig, attest, statement_of
from patcher.server.checks import cap_request, check_repo
from patcher.server.crashdb import CrashLog, Group
from patcher.server.dispatch import Dispatcher
from patcher.server.errors import Conflict, Forbidden, NotAvailable, TooLarge, TooMany
from patcher.server.eventlog import EventLog
from patcher.server.outbox import Outbox
from patcher.server.reverify import carried_approval, first_submitter, is_reverify, reverify_spec, with_origin
from patcher.server.settings import ServerSettings
from patcher.server.store import Review, Store, StoredJob, UnknownJob
from patcher.server.workers import PoolConfig, WorkerPool
from patcher.trace import scrub_userinfo

FINISHED = ("done", "failed", "cancelled")


class ReviewRequest(BaseModel):
    """A reviewer's decision on a verified job."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    decision: Literal["approve", "reject"]
    """approve or reject."""
    comment: str = Field("", max_length=10_000)
    """Why."""


def service_of(request: Request) -> JobService:
    """The service an app was made with (a FastAPI request's `app.state.service`)."""
    return request.app.state.service  # type: ignore[no-any-return]


class JobService:
    """The server's one object: submit, read, cancel, review and sign jobs; run them in a worker pool."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.store = Store(settings.store_url())
        self.events = EventLog(self.store.engine)
        self.crashes = CrashLog(self.store.engine)
        self.model = settings.model_settings()
        self.pool = WorkerPool(self.store, self.run, PoolConfig(
            workers=settings.workers, lease_s=settings.lease_s,
            exclusive=settings.exclusive and settings.workers > 0))  # an API-only node shares the store
        self._sign_lock = threading.RLock()
        self.outbox = Outbox(self.store, settings)
        self.dispatcher = Dispatcher(self.outbox)

    @cached_property
    def key(self) -> AttestConfig:
        """The signing key, loaded when a record is first signed (a worker never signs)."""
        return AttestConfig(signing_key=self.settings.key_path())

    def start(self) -> list[tuple[str, str]]:
        recovered = self.pool.start()
        if self.outbox.active:
            self.dispatcher.start()
        return recovered

    def stop(self, timeout: float = 5.0) -> None:
        self.pool.stop(timeout)
        self.dispatcher.stop()
        self.store.close()

    # jobs

    def submit(self, request: JobRequest, idempotency_key: str | None = None, who: str = "dev"
               ) -> tuple[StoredJob, bool]:
        self.allowed(who, "submit")
        if idempotency_key is not None and not 1 <= len(idempotency_key) <= 255:
            raise BadInput("the Idempotency-Key header must be 1 to 255 characters")
        return self.enqueue(request, who, self.settings.max_active_per_token, idempotency_key)

    def enqueue(self, request: JobRequest, who: str, max_active: int, idempotency_key: str | None = None,
                within: Callable[[Session, str], None] | None = None) -> tuple[StoredJob, bool]:
        """Queue a request of `who` (a token, or a project's crash intake) once it passes the server's checks:
        the traceback's size, the repository, the caps, `max_active` jobs of `who` queued or running."""
        size = len(request.traceback.encode("utf-8", "replace"))
        if size > self.settings.max_traceback_bytes:
            raise TooLarge(f"the traceback is {size} bytes; this server takes at most "
                           f"{self.settings.max_traceback_bytes} (PATCHER_MAX_TRACEBACK_BYTES)")
        check_repo(self.settings, request.repo)
        request = cap_request(self.settings, request)
        if self.store.active(who) >= max_active:
            raise TooMany(f"{who} already has {max_active} jobs queued or running "
                          "(PATCHER_MAX_ACTIVE_PER_TOKEN); wait for one to end")
        job, created = self.store.submit(request.model_dump(mode="json"), idempotency_key, submitter=who,
                                         within=within)
        if created:
            self.pool.notify()
        return job, created

    def reverify(self, job_id: str, ref: str, idempotency_key: str | None = None, who: str = "dev"
                 ) -> tuple[StoredJob, bool]:
        """Queue a re-verification of a verified job's diff on `ref` (reverify.py): no engine, a new record."""
        self.allowed(who, "submit")
        original = self.get(job_id)
        self._verified(original)
        check_repo(self.settings, original.spec["repo"])
        if self.store.active(who) >= self.settings.max_active_per_token:
            raise TooMany(f"{who} already has {self.settings.max_active_per_token} jobs queued or running "
                          "(PATCHER_MAX_ACTIVE_PER_TOKEN); wait for one to end")
        job, created = self.store.submit(reverify_spec(original, ref), idempotency_key, submitter=who)
        if created:
            self.pool.notify()
        return job, created

    def allowed(self, who: str, action: str) -> None:
        if not self.settings.may(who, action):
            names = "PATCHER_REVIEWERS" if action == "review" else "PATCHER_SUBMITTERS"
            raise Forbidden(f"{who} may not {action} on this server (not in {names})")

    def get(self, job_id: str) -> StoredJob:
        job = self.find(job_id)
        if job is None:
            raise UnknownJob(f"no job {job_id}")
        return job

    def find(self, job_id: str) -> StoredJob | None:
        return self.store.get(job_id)

    def list_jobs(self, state: str | None = None, limit: int = 50) -> list[StoredJob]:
        return self.store.list_jobs(state=state, limit=limit)

    def cancel(self, job_id: str, who: str = "dev") -> str:
        """Its submitter or a reviewer may cancel a job."""
        job = self.get(job_id)
        if job.submitter != who:
            self.allowed(who, "review")
        return self.pool.cancel(job_id)

    @staticmethod
    def view(job: StoredJob) -> dict[str, Any]:
        """The `patcher fix --json` object once the job has a result; before that, its id and state."""
        if job.result is not None:
            return job.result
        message = job.error or ("waiting for a worker" if job.state == "queued" else "running")
        return {"id": job.id, "state": job.state, "message": message}

    def summaries(self, jobs: list[StoredJob]) -> list[dict[str, Any]]:
        """Each job's summary (one lookup of the crashes behind them all)."""
        groups = self.crashes.of_jobs([job.id for job in jobs])
        return [self.summary(job, groups.get(job.id)) for job in jobs]

    def summary(self, job: StoredJob, crash: Group | None = None) -> dict[str, Any]:
        """The job as the list shows it; `crash`: the crash group behind it (looked up when not given)."""
        crash = crash or self.crashes.of_job(job.id)
        result = job.result or {}
        reviews = self.store.reviews(job.id)
        return {"id": job.id, "state": job.state, "created_at": job.created_at.isoformat(),
                "updated_at": job.updated_at.isoformat(), "repo": scrub_userinfo(str(job.spec.get("repo"))),
                "ref": job.spec.get("ref"), "submitter": job.submitter, "kind": job.spec.get("kind", "fix"),
                "of": job.spec.get("of"),
                "status": result.get("status"), "reason": result.get("reason"),
                "message": result.get("message") or job.error, "attempts": job.attempts,
                "review": reviews[-1].decision if reviews else None, "crash": crash.as_json() if crash else None}

    # running

    def run(self, spec: dict[str, Any], job_id: str) -> dict[str, Any]:
        """The pool's runner: the stored request plus the server's model, image and trace directory."""
        from patcher.config import SandboxConfig
        from patcher.pipeline import run_job

        pins = check_repo(self.settings, spec["repo"])  # again: a path or a DNS answer may have changed since submit
        clone = CloneLimits(timeout_s=self.settings.clone_timeout_s, max_bytes=self.settings.clone_max_bytes,
                            resolve=pins, access=self.settings.git_access())
        if is_reverify(spec):
            return self._reverify(spec, job_id, clone)
        request = JobRequest.model_validate(spec)
        spec_ = job_spec(request, model=self.model, trace_dir=self.job_dir(job_id),
                         sandbox=SandboxConfig(image=self.settings.sandbox_image), clone=clone)
        job = self.get(job_id)
        token, attempt = job.token or "", job.attempts
        return run_job(spec_, cancel=self.pool.flag(job_id),
                       on_event=lambda event: self._log_event(job_id, token, attempt, event)).as_json()

    def _reverify(self, spec: dict[str, Any], job_id: str, clone: CloneLimits) -> dict[str, Any]:
        from patcher.config import SandboxConfig
        from patcher.pipeline import verify_patch

        job = self.get(job_id)
        token, attempt = job.token or "", job.attempts
        result = verify_patch(spec["repo"], spec["diff"], ref=spec["ref"], test_command=spec.get("test_command"),
                              traceback=spec.get("traceback"), suite_command=spec.get("suite_command"),
                              setup=spec.get("setup"), python=spec.get("python"),
                              sandbox=SandboxConfig(image=self.settings.sandbox_image),
                              trace_dir=self.job_dir(job_id), clone=clone,
                              on_event=lambda event: self._log_event(job_id, token, attempt, event),
                              cancel=self.pool.flag(job_id))
        return with_origin(result.as_json(), spec)

    def _log_event(self, job_id: str, token: str, attempt: int, event: dict[str, Any]) -> None:
        # False once the claim is lost: this attempt's events (like its result) no longer count, and the
        # pool's heartbeat has already asked it to stop.
        self.events.append(job_id, token, attempt, event)

    def current_events(self, job_id: str) -> list[dict[str, Any]]:
        """The events of the job's newest attempt, from the shared log (any node)."""
        events = [event for _, event in self.events.after(job_id, 0, limit=100_000)]
        newest = max((e.get("job_attempt", 1) for e in events), default=1)
        return [e for e in events if e.get("job_attempt", 1) == newest]

    def job_dir(self, job_id: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9-]{1,40}", job_id):
            raise UnknownJob(f"no job {job_id}")
        return self.settings.home / "jobs" / job_id

    # reviews and records

    def review(self, job_id: str, decision: str, who: str, comment: str = "") -> tuple[Review, dict[str, Any]]:
        """Record the decision and sign the job's record again with it; only verified jobs are reviewed, by a
        reviewer, and (unless PATCHER_ALLOW_SELF_APPROVAL) never approved by their submitter."""
        self.allowed(who, "review")
        job = self.get(job_id)
        if decision == "approve" and who in (job.submitter, first_submitter(job)) \
                and not self.settings.allow_self_approval:
            raise Forbidden(f"{who} submitted job {job_id}, so someone else must approve it")
        self._verified(job)
        with self._sign_lock:  # the record on disk carries the last decision, also under concurrent reviews
            review = self.store.add_review(job_id, decision, who, comment)
            return review, self._sign(job, review)

    def reviews(self, job_id: str) -> list[Review]:
        return self.store.reviews(job_id)

    def carried(self, job: StoredJob) -> Approval | None:
        """The decision a re-verification carries over from the job it re-verifies (none of its own yet)."""
        return None if self.store.reviews(job.id) else carried_approval(self.store, job)

    def attestation(self, job_id: str) -> dict[str, Any]:
        """The signed record of a verified job (signed now if it has none, or one of another diff)."""
        job = self.get(job_id)
        result = self._verified(job, NotAvailable)
        path = self.job_dir(job_id) / "attestation.json"
        try:
            envelope = json.loads(path.read_text())
            if statement_of(envelope)["subject"][0]["digest"]["sha256"] == result["diff_sha256"]:
                return envelope
        except (OSError, ValueError, KeyError, IndexError):
            pass
        return self._sign(job, self._decision(job))

    def _verified(self, job: StoredJob, error: type[BadInput] = Conflict) -> dict[str, Any]:
        result = job.result
        if job.state != "done" or result is None or result.get("status") not in ("verified", "unjudged"):
            status = result.get("status") if result else None
            raise error(f"job {job.id} is {job.state}" + (f" ({status})" if status else "")
                        + "; only a job whose tests proved its diff (verified or unjudged) has a signed record and "
                        "can be reviewed")
        return result

    def _decision(self, job: StoredJob) -> Review | Approval | None:
        """The job's newest review, else the one a re-verification carries over (same digest only)."""
        reviews = self.store.reviews(job.id)
        return reviews[-1] if reviews else carried_approval(self.store, job)

    def _sign(self, job: StoredJob, review: Review | Approval | None) -> dict[str, Any]:
        approval = review if isinstance(review, Approval) or review is None else Approval(
            decision=review.decision, who=review.who, when=review.when, comment=review.comment)  # type: ignore[arg-type]
        assert job.result is not None
        suite = (job.result.get("verification") or {}).get("pass_to_pass", {}).get("command")
        envelope = attest(job.result, self.key, image=self.settings.sandbox_image, suite_command=suite,
                          approval=approval, submitter=first_submitter(job))
        path = self.job_dir(job.id) / "attestation.json"
        with self._sign_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(envelope, indent=2))
            os.replace(tmp, path)
        return envelope
