"""What goes out when a job changes: the webhook messages its endpoints subscribe to, and its delivery as a pull
request when its project delivers. Both are written by a store listener inside the transaction of the change
(outboxdb.py), so a job never ends without its events recorded; the dispatcher (dispatch.py) sends them.

Events: job.submitted; job.verified, job.unjudged, job.not_verified or job.failed when a job ends (failed: an error, a
failed or cancelled run); job.approved, job.rejected on a review; job.delivered when its pull request is
open, job.failed (with `data.delivery.error`) when a delivery fails.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from patcher.delivery import EventType
from patcher.errors import BadInput
from patcher.server.crashdb import CrashGroupRow, CrashLog
from patcher.server.db import JobRow
from patcher.server.outboxdb import AttemptRow, DeliveryRow, MessageRow, create_outbox, now
from patcher.server.settings import ServerSettings
from patcher.server.store import JobChange, Store
from patcher.trace import scrub_userinfo


class NotDeliverable(BadInput):
    """The job cannot be delivered (not verified, no delivery for its project, already delivered)."""


class Outbox:
    def __init__(self, store: Store, settings: ServerSettings) -> None:
        self.engine, self.settings = store.engine, settings
        CrashLog(store.engine)  # the crash groups it reads
        create_outbox(store.engine)
        store.listeners.append(self.on_change)

    @property
    def active(self) -> bool:
        """Whether anything can go out at all (a webhook endpoint, or a project that delivers)."""
        projects = self.settings.projects()
        return bool(projects.webhooks) or any(p.delivery for p in projects.projects)

    def on_change(self, s: Session, job_id: str, change: JobChange) -> None:
        if not self.active:
            return
        job = s.get_one(JobRow, job_id)
        group = s.scalar(select(CrashGroupRow).where(CrashGroupRow.job_id == job_id))
        self.emit(s, job, group, _event_of(change, job))
        project = self.settings.projects().by_name(group.project if group else None)
        if project is None or project.delivery is None or not _verified(job):
            return
        due = (change == "finished" and project.delivery.when == "verified") or \
            (change == "approved" and project.delivery.when == "approved")
        if due and s.get(DeliveryRow, job_id) is None:
            at = now()
            s.add(DeliveryRow(job_id=job_id, project=project.name, state="pending", next_at=at, updated_at=at))

    def emit(self, s: Session, job: JobRow, group: CrashGroupRow | None, kind: EventType,
             delivery: dict[str, Any] | None = None) -> None:
        """A message for each endpoint that wants `kind` of this job's project."""
        project = group.project if group else None
        at = now()
        for endpoint in self.settings.projects().webhooks:
            if kind not in endpoint.events or (endpoint.projects and project not in endpoint.projects):
                continue
            event = {"type": kind, "timestamp": at.isoformat(), "data": self.data(job, group, delivery)}
            s.add(MessageRow(id=f"msg_{secrets.token_hex(12)}", endpoint=endpoint.name, job_id=job.id, type=kind,
                             event=event, state="pending", tries=0, next_at=at, created_at=at))

    def data(self, job: JobRow, group: CrashGroupRow | None, delivery: dict[str, Any] | None) -> dict[str, Any]:
        result = job.result or {}
        verified = _verified(job)
        crash = None if group is None else {
            "project": group.project, "release": group.release, "title": group.title, "culprit": group.culprit,
            "count": group.count, "first_seen": group.first_seen.isoformat(), "last_seen": group.last_seen.isoformat()}
        return {"id": job.id, "state": job.state, "status": result.get("status"), "reason": result.get("reason"),
                "message": result.get("message") or job.error, "repo": scrub_userinfo(str(job.spec.get("repo"))),
                "ref": job.spec.get("ref"), "submitter": job.submitter, "diff_sha256": result.get("diff_sha256"),
                "crash": crash, "delivery": delivery,
                "links": {"job": self.settings.link(f"/jobs/{job.id}"),
                          "record": self.settings.link(f"/v1/jobs/{job.id}/attestation") if verified else None}}

    # reading and retrying

    def delivery_of(self, job_id: str) -> dict[str, Any] | None:
        with Session(self.engine) as s:
            row = s.get(DeliveryRow, job_id)
            return None if row is None else {
                "state": row.state, "branch": f"patcher/{job_id}", "commit": row.commit, "pushed": row.pushed,
                "pull_request": row.pull_request, "error": row.error, "tries": row.tries,
                "updated_at": row.updated_at.isoformat()}

    def delivers(self, job_id: str) -> bool:
        """Whether the job belongs to a project that delivers pull requests."""
        with Session(self.engine) as s:
            name = s.scalar(select(CrashGroupRow.project).where(CrashGroupRow.job_id == job_id))
        project = self.settings.projects().by_name(name)
        return project is not None and project.delivery is not None

    def attempts_of(self, job_id: str) -> list[dict[str, Any]]:
        """Every webhook attempt for the job, oldest first, with its message's state."""
        with Session(self.engine) as s:
            rows = s.execute(select(MessageRow, AttemptRow).join(AttemptRow, AttemptRow.message_id == MessageRow.id,
                                                                 isouter=True)
                             .where(MessageRow.job_id == job_id).order_by(MessageRow.created_at, AttemptRow.id))
            return [{"message": m.id, "endpoint": m.endpoint, "type": m.type, "state": m.state,
                     "attempt": a.n if a else None, "at": a.at.isoformat() if a else None,
                     "status": a.status if a else None, "error": a.error if a else None,
                     "duration_ms": round(a.duration_ms, 1) if a else None} for m, a in rows]

    def retry(self, job_id: str) -> str:
        """Queue the job's delivery again (after a failure, or for a verified job of a delivering project that
        has none yet); returns its state. NotDeliverable otherwise."""
        with Session(self.engine) as s, s.begin():
            job = s.get(JobRow, job_id)
            group = s.scalar(select(CrashGroupRow).where(CrashGroupRow.job_id == job_id))
            project = self.settings.projects().by_name(group.project if group else None)
            if job is None or not _verified(job):
                raise NotDeliverable(f"job {job_id} is not verified; only a verified job is delivered")
            if project is None or project.delivery is None:
                raise NotDeliverable(f"job {job_id} belongs to no project that delivers pull requests")
            row = s.get(DeliveryRow, job_id, with_for_update=True)
            at = now()
            if row is None:
                s.add(DeliveryRow(job_id=job_id, project=project.name, state="pending", next_at=at, updated_at=at))
                return "pending"
            if row.state == "done":
                raise NotDeliverable(f"job {job_id} is delivered already: {row.pull_request}")
            if row.state == "failed":
                row.state, row.next_at, row.updated_at = "pending", at, at
            return row.state


def _verified(job: JobRow) -> bool:
    return job.state == "done" and (job.result or {}).get("status") == "verified"


def _event_of(change: JobChange, job: JobRow) -> EventType:
    if change == "submitted":
        return "job.submitted"
    if change in ("approved", "rejected"):
        return "job.approved" if change == "approved" else "job.rejected"
    status = (job.result or {}).get("status")
    if job.state == "done" and status in ("verified", "unjudged", "not_verified"):
        return "job.verified" if status == "verified" else "job.unjudged" if status == "unjudged" else \
            "job.not_verified"
    return "job.failed"
