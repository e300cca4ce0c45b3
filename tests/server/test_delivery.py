"""Delivery and webhooks on a running `patcher serve` (API only), over real parts (tests/support/world.py): the
shop's remote on git's smart HTTP behind a token, the scripted forge through PyGithub, webhook receivers that
check every delivery with the `standardwebhooks` library. The job is opened by a real sentry-sdk crash and
finished by hand in the shared store, as a worker records it (tests/e2e runs a real one), so the server's
dispatcher sends what the store's listener recorded."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from patcher.server import load_settings
from patcher.server.outbox import Outbox
from patcher.server.store import Store
from tests.support.api import ALICE
from tests.support.crashes import fixed
from tests.support.helpers import git
from tests.support.world import API_TOKEN, TOKEN, World, until, world

Shop = tuple[World, Store]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    """The world around an API node, and the shared store as a worker sees it (its listener records what the
    server's dispatcher sends)."""
    with world(tmp_path_factory.mktemp("deliver")) as w:
        env = w.server.env
        settings = load_settings(home=Path(env["PATCHER_HOME"]), database_url=env["PATCHER_DATABASE_URL"], dev=True,
                                 projects_file=Path(env["PATCHER_PROJECTS_FILE"]), allow_private_hosts=True,
                                 git_tokens_file=Path(env["PATCHER_GIT_TOKENS_FILE"]),
                                 public_url=env["PATCHER_PUBLIC_URL"])
        store = Store(env["PATCHER_DATABASE_URL"])
        Outbox(store, settings)
        yield w, store


def verified_job(shop: Shop, release: str) -> str:
    """A crash from the SDK opens a job; it is finished verified with the shop's fix, as a worker records it."""
    world, store = shop
    world.crash(release)
    job_id = world.job_of(release)
    claimed = store.claim()
    assert claimed is not None and claimed.id == job_id and claimed.token is not None
    diff, tree, result_tree = fixed(world.work)
    result = {"run_id": f"run-{job_id}", "status": "verified", "reason": "verified",
              "message": "the reproduction passes with the diff",
              "diff": diff, "diff_sha256": hashlib.sha256(diff.encode()).hexdigest(),
              "files_changed": ["shop/pagination.py"],
              "verification": {"reproduction": {"command": "python -m pytest -q tests/test_pagination.py",
                                                "before": "failed", "after": "passed"},
                               "fail_to_pass": ["tests/test_pagination.py::test_last_page"],
                               "pass_to_pass": {"total": 2, "regressions": []}, "flaky": [], "duration_s": 1.0},
              "provenance": {"source_commit": release, "tree": tree, "result_tree": result_tree}}
    assert store.finish(job_id, claimed.token, result) == "done"
    return job_id


def test_a_verified_crash_job_becomes_a_pull_request_and_every_event_a_signed_webhook(shop: Shop) -> None:
    world = shop[0]
    release = git(world.work, "rev-parse", "HEAD")
    job_id = verified_job(shop, release)
    done = until(lambda: (d := world.delivery(job_id))["delivery"] and d["delivery"]["state"] == "done" and d)
    assert done["delivery"]["pull_request"].endswith("/team/shop/pull/1") and world.remote.pushes == 1
    assert git(world.bare, "rev-parse", f"patcher/{job_id}^") == release
    [pull] = world.forge.pulls
    assert pull["head"] == f"patcher/{job_id}" and f"https://patcher.test/jobs/{job_id}" in pull["body"]
    assert f"https://patcher.test/v1/jobs/{job_id}/attestation" in pull["body"]
    assert all(r.headers["authorization"].endswith(API_TOKEN) for r in world.forge.requests)

    got = until(lambda: "job.delivered" in world.hooks.types() and world.hooks.got)
    assert all(g["verified"] for g in got), "every delivery verifies with the standardwebhooks library"
    mine = [g for g in got if g["body"]["data"]["id"] == job_id and g["status"] < 300]
    assert sorted(g["body"]["type"] for g in mine) == ["job.delivered", "job.submitted", "job.verified"]
    failed = next(g for g in got if g["status"] == 500)  # the receiver failed the first request it got
    again = [g["status"] for g in got if g["headers"]["webhook-id"] == failed["headers"]["webhook-id"]]
    assert again == [500, 204], "the failed attempt was retried with the same id"
    by_type = {g["body"]["type"]: g["body"]["data"] for g in mine}
    assert by_type["job.delivered"]["delivery"]["pull_request"] == done["delivery"]["pull_request"]
    assert by_type["job.verified"]["crash"]["count"] == 1
    slack = until(lambda: world.slack.got)
    assert slack[0]["verified"] and f"<{done['delivery']['pull_request']}|pull request>" in slack[0]["body"]["text"]
    attempts = world.delivery(job_id)["webhooks"]
    retried = [(a["endpoint"], a["attempt"], a["status"]) for a in attempts
               if a["message"] == failed["headers"]["webhook-id"]]
    assert retried == [("ops", 1, 500), ("ops", 2, 204)]
    with world.server.client() as c:
        page = c.get(f"/jobs/{job_id}").text
    assert 'id="pull-request"' in page and 'class="webhook-row"' in page


def test_a_failed_delivery_says_why_and_a_retry_from_the_page_pushes_nothing_twice(shop: Shop) -> None:
    world = shop[0]
    pushes = world.remote.pushes
    world.forge.fail(4, 502)  # every attempt of the pull request fails: the push stays, the delivery fails
    job_id = verified_job(shop, world.new_release("second"))
    failed = until(lambda: (d := world.delivery(job_id))["delivery"] and d["delivery"]["state"] == "failed" and d)
    assert "502" in failed["delivery"]["error"] and failed["delivery"]["pushed"]
    assert world.remote.pushes == pushes + 1
    with world.server.client() as c:
        page = c.get(f"/jobs/{job_id}").text
        assert 'id="delivery-error"' in page and "502" in page and 'id="retry-delivery"' in page
        r = c.post(f"/jobs/{job_id}/deliver", headers={"Origin": world.server.url}, follow_redirects=False)
        assert r.status_code == 303, r.text
    done = until(lambda: (d := world.delivery(job_id))["delivery"]["state"] == "done" and d)
    assert done["delivery"]["pull_request"] and world.remote.pushes == pushes + 1, "no second push"
    with world.server.client() as c:
        again = c.post(f"/v1/jobs/{job_id}/deliver")
        assert again.status_code == 409 and "delivered already" in again.json()["detail"]
    failed_events = [g["body"] for g in world.hooks.got if g["body"]["data"]["id"] == job_id]
    assert any(e["type"] == "job.failed" and "502" in e["data"]["delivery"]["error"] for e in failed_events)


def test_only_a_verified_job_is_delivered(shop: Shop) -> None:
    world = shop[0]
    world.crash("9" * 40)
    queued = world.job_of("9" * 40)
    with world.server.client(ALICE) as c:
        r = c.post(f"/v1/jobs/{queued}/deliver")
        assert c.post(f"/v1/jobs/{queued}/cancel").status_code == 200  # the later tests claim their own jobs
    assert r.status_code == 409 and "not verified" in r.json()["detail"]


def test_a_failed_push_is_retried_from_the_page_and_pushed_once(shop: Shop) -> None:
    world = shop[0]
    pushes, pulls = world.remote.pushes, len(world.forge.pulls)
    world.remote.options["fail_pushes"] = 1  # the remote answers the first push with 500
    job_id = verified_job(shop, world.new_release("third"))
    failed = until(lambda: (d := world.delivery(job_id))["delivery"] and d["delivery"]["state"] == "failed" and d)
    assert "cannot push to" in failed["delivery"]["error"] and not failed["delivery"]["pushed"]
    assert TOKEN not in failed["delivery"]["error"]
    assert world.remote.pushes == pushes and len(world.forge.pulls) == pulls
    with world.server.client() as c:
        r = c.post(f"/jobs/{job_id}/deliver", headers={"Origin": world.server.url}, follow_redirects=False)
        assert r.status_code == 303, r.text
    done = until(lambda: (d := world.delivery(job_id))["delivery"]["state"] == "done" and d)
    assert done["delivery"]["pushed"] and world.remote.pushes == pushes + 1 and len(world.forge.pulls) == pulls + 1
    assert git(world.bare, "rev-parse", f"patcher/{job_id}") == done["delivery"]["commit"]
