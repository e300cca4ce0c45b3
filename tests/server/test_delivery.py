"""Delivery and webhooks on a running `patcher serve` (API only), over real parts: the shop's remote on git's
smart HTTP behind a token, the scripted forge through PyGithub, webhook receivers that check every delivery
with the `standardwebhooks` library. The job is opened by a real sentry-sdk crash and finished by hand in the
shared store (as a worker would record it: tests/e2e runs a real one), so the server's dispatcher sends what
the store's listener recorded."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from patcher.server import load_settings
from patcher.server.outbox import Outbox
from patcher.server.store import Store
from patcher.testing import ScriptedForge
from tests.support.api import ALICE, ApiServer
from tests.support.crashes import Receiver, dsn, fixed, project, projects_file, send_crash, shop_repo, tokens_file
from tests.support.helpers import git
from tests.support.private_servers import GitHandler, Recorder, basic, serving, url_of

TOKEN = "ghs_server0123456789abcdefgh"
API_TOKEN = "forge-server-0123456789abc"
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
SLACK_SECRET = "whsec_" + base64.b64encode(b"fedcba9876543210fedcba9876543210").decode()


class World:
    def __init__(self, server: ApiServer, remote: Recorder, forge: ScriptedForge, hooks: Receiver, slack: Receiver,
                 work: Path) -> None:
        self.server, self.remote, self.forge, self.hooks, self.slack, self.work = \
            server, remote, forge, hooks, slack, work
        env = server.env
        settings = load_settings(home=Path(env["PATCHER_HOME"]), database_url=env["PATCHER_DATABASE_URL"], dev=True,
                                 projects_file=Path(env["PATCHER_PROJECTS_FILE"]), allow_private_hosts=True,
                                 git_tokens_file=Path(env["PATCHER_GIT_TOKENS_FILE"]),
                                 public_url=env["PATCHER_PUBLIC_URL"])
        self.store = Store(env["PATCHER_DATABASE_URL"])
        Outbox(self.store, settings)  # this process records what the server's dispatcher sends, as a worker would


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("deliver")
    work, _ = shop_repo(home / "work")
    (home / "remotes").mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(home / "remotes" / "shop.git")], check=True)
    hooks, slack = Receiver(SECRET, fail=1), Receiver(SLACK_SECRET)
    with serving(GitHandler, root=str(home / "remotes"), auth=basic("x-access-token", TOKEN)) as remote, \
            ScriptedForge(token=API_TOKEN) as forge:
        url = url_of(remote, "/shop.git")
        shop = project(url, delivery={"forge": "github", "api_url": forge.api("github"), "repository": "team/shop"})
        files = projects_file(home / "projects.json", [shop], [
            {"name": "ops", "url": hooks.url, "secret": SECRET, "retry_s": [0.2, 0.2, 0.2]},
            {"name": "chat", "url": slack.url, "secret": SLACK_SECRET, "format": "slack",
             "events": ["job.delivered"]}])
        tokens = tokens_file(home / "git-tokens", {url.rsplit("/", 1)[0]: f"x-access-token:{TOKEN}",
                                                   forge.base_url: API_TOKEN})
        server = ApiServer(home, "", PATCHER_WORKERS="0", PATCHER_PROJECTS_FILE=str(files), OPENAI_BASE_URL="",
                           PATCHER_MODEL="", PATCHER_GIT_TOKENS_FILE=str(tokens), PATCHER_ALLOW_PRIVATE_HOSTS="1",
                           PATCHER_PUBLIC_URL="https://patcher.test").start()
        try:
            yield World(server, remote, forge, hooks, slack, work)
        finally:
            server.stop()
            hooks.close()
            slack.close()


def verified_job(world: World, release: str) -> str:
    """A crash from the SDK opens a job; it is finished verified with the shop's fix, as a worker records it."""
    send_crash(dsn(world.server.url), world.work, release)
    with world.server.client() as c:
        job_id = next(j["id"] for j in c.get("/v1/jobs").json()["jobs"] if (j["crash"] or {}).get("release") == release)
    claimed = world.store.claim()
    assert claimed is not None and claimed.id == job_id and claimed.token is not None
    diff, tree, result_tree = fixed(world.work)
    result = {"status": "verified", "reason": "verified", "message": "the reproduction passes with the diff",
              "diff": diff, "diff_sha256": hashlib.sha256(diff.encode()).hexdigest(),
              "files_changed": ["shop/pagination.py"],
              "verification": {"reproduction": {"command": "python -m pytest -q tests/test_pagination.py",
                                                "before": "failed", "after": "passed"},
                               "fail_to_pass": ["tests/test_pagination.py::test_last_page"],
                               "pass_to_pass": {"total": 2, "regressions": []}, "flaky": [], "duration_s": 1.0},
              "provenance": {"source_commit": release, "tree": tree, "result_tree": result_tree}}
    assert world.store.finish(job_id, claimed.token, result) == "done"
    return job_id


def new_release(world: World, name: str) -> str:
    """A new commit of the shop, on its remote too: the release a new deployment reports."""
    (world.work / f"{name}.txt").write_text(name)
    git(world.work, "add", "-A")
    git(world.work, "commit", "-q", "-m", name)
    git(world.work, "push", "-q", str(world.server.home / "remotes" / "shop.git"), "HEAD:main")
    return git(world.work, "rev-parse", "HEAD")


def until(check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError("not in time")


def delivery(world: World, job_id: str) -> dict[str, Any]:
    with world.server.client() as c:
        return dict(c.get(f"/v1/jobs/{job_id}/delivery").json())


def test_a_verified_crash_job_becomes_a_pull_request_and_every_event_a_signed_webhook(world: World) -> None:
    release = git(world.work, "rev-parse", "HEAD")
    job_id = verified_job(world, release)
    done = until(lambda: (d := delivery(world, job_id))["delivery"] and d["delivery"]["state"] == "done" and d)
    assert done["delivery"]["pull_request"].endswith("/team/shop/pull/1") and world.remote.pushes == 1
    bare = world.server.home / "remotes" / "shop.git"
    assert git(bare, "rev-parse", f"patcher/{job_id}^") == release
    [pull] = world.forge.pulls
    assert pull["head"] == f"patcher/{job_id}" and f"https://patcher.test/jobs/{job_id}" in pull["body"]
    assert f"https://patcher.test/v1/jobs/{job_id}/attestation" in pull["body"]
    assert all(r.headers["authorization"].endswith(API_TOKEN) for r in world.forge.requests)

    got = until(lambda: "job.delivered" in world.hooks.types() and world.hooks.got)
    assert all(g["verified"] for g in got), "every delivery verifies with the standardwebhooks library"
    mine = [g for g in got if g["body"]["data"]["id"] == job_id and g["status"] < 300]
    assert [g["body"]["type"] for g in mine] == ["job.submitted", "job.verified", "job.delivered"]
    first = [g for g in got if g["headers"]["webhook-id"] == mine[0]["headers"]["webhook-id"]]
    assert [g["status"] for g in first] == [500, 204], "the failed first attempt was retried with the same id"
    assert mine[2]["body"]["data"]["delivery"]["pull_request"] == done["delivery"]["pull_request"]
    assert mine[1]["body"]["data"]["crash"]["count"] == 1
    slack = until(lambda: world.slack.got)
    assert slack[0]["verified"] and f"<{done['delivery']['pull_request']}|pull request>" in slack[0]["body"]["text"]
    attempts = delivery(world, job_id)["webhooks"]
    assert [(a["endpoint"], a["type"], a["status"]) for a in attempts if a["type"] == "job.submitted"] == \
        [("ops", "job.submitted", 500), ("ops", "job.submitted", 204)]


def test_a_failed_delivery_says_why_and_a_retry_from_the_page_pushes_nothing_twice(world: World) -> None:
    pushes = world.remote.pushes
    world.forge.fail(4, 502)  # every attempt of the pull request fails: the push stays, the delivery fails
    job_id = verified_job(world, new_release(world, "second"))
    failed = until(lambda: (d := delivery(world, job_id))["delivery"] and d["delivery"]["state"] == "failed" and d)
    assert "502" in failed["delivery"]["error"] and failed["delivery"]["pushed"]
    assert world.remote.pushes == pushes + 1
    with world.server.client() as c:
        page = c.get(f"/jobs/{job_id}").text
        assert 'id="delivery-error"' in page and "502" in page and 'id="retry-delivery"' in page
        r = c.post(f"/jobs/{job_id}/deliver", headers={"Origin": world.server.url}, follow_redirects=False)
        assert r.status_code == 303, r.text
    done = until(lambda: (d := delivery(world, job_id))["delivery"]["state"] == "done" and d)
    assert done["delivery"]["pull_request"] and world.remote.pushes == pushes + 1, "no second push"
    with world.server.client() as c:
        again = c.post(f"/v1/jobs/{job_id}/deliver")
        assert again.status_code == 409 and "delivered already" in again.json()["detail"]
        failed_events = [g["body"] for g in world.hooks.got if g["body"]["data"]["id"] == job_id]
        assert any(e["type"] == "job.failed" and "502" in e["data"]["delivery"]["error"] for e in failed_events)


def test_only_a_reviewer_may_deliver_and_only_a_verified_job(world: World) -> None:
    send_crash(dsn(world.server.url), world.work, "9" * 40)
    with world.server.client(ALICE) as c:
        jobs = c.get("/v1/jobs").json()["jobs"]
        queued = next(j["id"] for j in jobs if (j["crash"] or {}).get("release") == "9" * 40)
        r = c.post(f"/v1/jobs/{queued}/deliver")
    assert r.status_code == 409 and "not verified" in r.json()["detail"]
