"""The crash groups and the outbox on both databases: a new crash opens one job with its group in one
transaction, the same event twice is one event, each job change records its webhook messages (and a verified
crash job its delivery) in the change's own transaction, and a due row is claimed by one node at a time."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from patcher.crash import Crash, CrashException, CrashFrame
from patcher.server import load_settings
from patcher.server.crashdb import CrashLog, Replayed, group_key
from patcher.server.outbox import NotDeliverable, Outbox
from patcher.server.outboxdb import DeliveryRow, MessageRow, claim
from patcher.server.store import Store
from tests.support.crashes import project, projects_file

pytest_plugins = ["tests.support.store_helpers"]
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


def crash(event_id: str, release: str = "r1") -> Crash:
    frame = CrashFrame("/srv/shop/pagination.py", "shop/pagination.py", "page", 12, "return x", True)
    return Crash(event_id, release, None, (CrashException("IndexError", "list index out of range", (frame,)),))


@pytest.fixture()
def outbox(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Outbox:
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    files = projects_file(tmp_path / "p.json", [project("https://git.example.com/shop.git",
                                                        delivery={"forge": "gitea"})],
                          [{"name": "ops", "url": "https://hooks.example.com/x", "secret": SECRET,
                            "events": ["job.submitted", "job.verified"]}])
    return Outbox(store, load_settings(dev=True, projects_file=files, database_url=store.url))


def test_a_crash_opens_one_job_and_its_events_are_counted_once(store: Store) -> None:
    log = CrashLog(store.engine)
    first = crash("a" * 32)
    key = group_key("shop", first)
    assert log.count(key, "shop", first.event_id) is None
    job, _ = store.submit({"repo": "x", "traceback": "t"}, submitter="crash:shop",
                          within=lambda s, job_id: log.open(s, job_id, key, "shop", first))
    assert log.seen("shop", "a" * 32) and log.count(key, "shop", "b" * 32) == job.id
    with pytest.raises(Replayed):
        log.count(key, "shop", "b" * 32)
    group = log.of_job(job.id)
    assert group is not None and (group.count, group.release, group.title) == (2, "r1", first.title)
    assert group_key("shop", crash("c" * 32, release="r2")) != key
    assert log.retry_after("shop", 2, 60) is not None and log.retry_after("shop", 3, 60) is None


def test_job_changes_record_their_messages_and_a_verified_crash_job_its_delivery(store: Store, outbox: Outbox
                                                                                 ) -> None:
    log = CrashLog(store.engine)
    found = crash("d" * 32)
    job, _ = store.submit({"repo": "x", "traceback": "t"}, submitter="crash:shop",
                          within=lambda s, job_id: log.open(s, job_id, group_key("shop", found), "shop", found))
    with pytest.raises(NotDeliverable, match="not verified"):
        outbox.retry(job.id)
    claimed = store.claim()
    assert claimed is not None and claimed.token is not None
    store.finish(job.id, claimed.token, {"status": "verified", "reason": "verified", "diff": "d"})
    with Session(store.engine) as s:
        types = sorted(m.type for m in s.query(MessageRow).filter_by(job_id=job.id))
        assert types == ["job.submitted", "job.verified"]  # the endpoint's events only
        assert s.get_one(DeliveryRow, job.id).state == "pending"
    with Session(store.engine) as s, s.begin():
        first = claim(s, MessageRow, 60, 10)
    with Session(store.engine) as s, s.begin():
        again = claim(s, MessageRow, 60, 10)
    assert len(first) == 2 and again == [], "a claimed row is not claimed again while its lease holds"
    assert outbox.retry(job.id) == "pending"


def test_a_failing_listener_never_costs_a_job_its_result(store: Store, outbox: Outbox) -> None:
    def broken(s: Session, job_id: str, change: str) -> None:
        s.add(MessageRow(id="msg_half", endpoint="x", job_id=job_id, type="job.verified", event={}, state="pending",
                         tries=0, next_at=datetime.now(UTC), created_at=datetime.now(UTC)))
        raise RuntimeError("a bug in a listener")

    store.listeners.append(broken)
    job, _ = store.submit({"repo": "x", "traceback": "t"})
    claimed = store.claim()
    assert claimed is not None and claimed.token is not None
    assert store.finish(job.id, claimed.token, {"status": "verified"}) == "done"
    with Session(store.engine) as s:
        assert s.get(MessageRow, "msg_half") is None
        assert {m.type for m in s.query(MessageRow).filter_by(job_id=job.id)} == {"job.submitted", "job.verified"}


def test_an_approving_project_is_delivered_once_approved(store: Store, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    files = projects_file(tmp_path / "a.json", [project("https://git.example.com/shop.git",
                                                        delivery={"forge": "github", "when": "approved"})])
    Outbox(store, load_settings(dev=True, projects_file=files, database_url=store.url))
    log = CrashLog(store.engine)
    found = crash("e" * 32)
    job, _ = store.submit({"repo": "x", "traceback": "t"}, submitter="crash:shop",
                          within=lambda s, job_id: log.open(s, job_id, group_key("shop", found), "shop", found))
    claimed = store.claim()
    assert claimed is not None and claimed.token is not None
    store.finish(job.id, claimed.token, {"status": "verified"})
    with Session(store.engine) as s:
        assert s.get(DeliveryRow, job.id) is None
    store.add_review(job.id, "approve", "bob")
    with Session(store.engine) as s:
        assert s.get_one(DeliveryRow, job.id).state == "pending"
