"""What `patcher serve` refuses, against a real server on loopback: URLs with credentials, private and
loopback destinations, a path that escapes the repo roots through an enclosing repository, limits above
the server's caps, a token over its running-job cap, a token without the permission for what it asks,
and requests for a Host it does not answer to or from another site's page (also in dev mode)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.api import ALICE, BOB, ApiServer, job_body
from tests.support.example import PRODUCTION_TB
from tests.support.helpers import make_repo

CAROL = "carol-0a1b2c3d4e5f6a7b8c9d"


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """alice submits, bob reviews, carol only reads; one active job per token; small caps."""
    srv = ApiServer(tmp_path_factory.mktemp("strict"), "http://127.0.0.1:9", PATCHER_SUBMITTERS="alice",
                    PATCHER_REVIEWERS="bob", PATCHER_TOKENS=f"alice:{ALICE},bob:{BOB},carol:{CAROL}",
                    PATCHER_MAX_ACTIVE_PER_TOKEN="1", PATCHER_MAX_ROUNDS="10", PATCHER_MAX_TIMEOUT_S="60",
                    PATCHER_MAX_COST_USD="2").start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(("repo", "words"), [
    ("https://alice:ghp_abcdefghijklmnop@github.com/o/r.git", "must not carry credentials"),
    ("https://ghp_abcdefghijklmnop@github.com/o/r.git", "must not carry credentials"),
    ("https://127.0.0.1/o/r.git", "loopback, link-local, private"),
    ("http://169.254.169.254/latest/meta-data", "loopback, link-local, private"),
    ("git://10.1.2.3:6379/x", "loopback, link-local, private"),
    ("https://[::1]:2375/x", "loopback, link-local, private"),
    ("https://[::ffff:127.0.0.1]/x", "loopback, link-local, private"),
    ("ssh://git@192.168.1.1/x", "loopback, link-local, private"),
    ("git@localhost:o/r.git", "loopback, link-local, private"),
    ("https://no-such-host.invalid/x", "does not resolve"),
    ("ftp://example.com/x", "only https, http, ssh and git"),
])
def test_repo_urls_with_credentials_or_private_destinations_are_refused(strict: ApiServer, repo: str,
                                                                          words: str) -> None:
    with strict.client() as c:
        r = c.post("/v1/jobs", json={"repo": repo, "traceback": PRODUCTION_TB})
    assert r.status_code == 400 and words in r.json()["detail"], r.text
    assert "ghp_abcdefghijklmnop" not in r.text


def test_a_plain_directory_under_a_root_cannot_stage_the_repository_around_the_root(tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer", {"secret.txt": "private\n"})
    (outer / "roots" / "plain").mkdir(parents=True)
    srv = ApiServer(tmp_path / "srv", "http://127.0.0.1:9", PATCHER_REPO_ROOTS=str(outer / "roots")).start()
    try:
        with srv.client() as c:
            r = c.post("/v1/jobs", json={"repo": str(outer / "roots" / "plain"), "traceback": PRODUCTION_TB})
    finally:
        srv.stop()
    assert r.status_code == 400 and "outside the allowed roots" in r.json()["detail"], r.text


def test_limits_above_the_caps_are_refused_and_an_unset_cost_takes_the_cap(strict: ApiServer) -> None:
    body = job_body(strict.repo())
    with strict.client() as c:
        r = c.post("/v1/jobs", json=body | {"limits": {"max_rounds": 1_000_000_000, "timeout_s": 1e12}})
        assert r.status_code == 400, r.text
        assert "max_rounds 1000000000 > 10" in r.json()["detail"] and "timeout_s" in r.json()["detail"]
        assert c.post("/v1/jobs", json=body | {"limits": {"max_cost_usd": 5}}).status_code == 400


def test_permissions_and_the_per_token_cap(strict: ApiServer) -> None:
    with strict.client(CAROL) as carol, strict.client(BOB) as bob:
        body = job_body(strict.repo())
        for c in (carol, bob):
            r = c.post("/v1/jobs", json=body)
            assert r.status_code == 403 and "not in PATCHER_SUBMITTERS" in r.json()["detail"]
        r = carol.post("/v1/jobs/x/review", json={"decision": "approve"})
        assert r.status_code == 403 and "not in PATCHER_REVIEWERS" in r.json()["detail"]


def test_a_token_over_its_active_job_cap_gets_429(tmp_path: Path) -> None:
    with socket.socket() as silent:  # a clone that never gets an answer keeps alice's one job running
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        srv = ApiServer(tmp_path, "http://127.0.0.1:9", PATCHER_ALLOW_PRIVATE_HOSTS="1",
                        PATCHER_MAX_ACTIVE_PER_TOKEN="1", PATCHER_CLONE_TIMEOUT_S="60").start()
        body = {"repo": f"git://127.0.0.1:{silent.getsockname()[1]}/x", "traceback": PRODUCTION_TB}
        try:
            with srv.client() as alice, srv.client(BOB) as bob:
                first = alice.post("/v1/jobs", json=body)
                assert first.status_code == 202, first.text
                second = alice.post("/v1/jobs", json=body)
                assert second.status_code == 429 and "PATCHER_MAX_ACTIVE_PER_TOKEN" in second.json()["detail"]
                assert bob.post("/v1/jobs", json=body).status_code == 202, "the cap is per token"
                assert bob.post(f"/v1/jobs/{first.json()['id']}/cancel").status_code == 200, "every token reviews"
        finally:
            srv.stop()


def test_unknown_host_and_cross_site_posts_are_refused(strict: ApiServer, tmp_path: Path) -> None:
    dev = ApiServer(tmp_path / "dev", "http://127.0.0.1:9", PATCHER_DEV="1", PATCHER_TOKENS="").start()
    try:
        for srv in (strict, dev):
            with srv.client() as c:
                r = c.get("/v1/jobs", headers={"Host": "evil.example"})
                assert r.status_code == 421 and "PATCHER_ALLOWED_HOSTS" in r.json()["detail"]
                for origin in ("https://evil.example", "null"):
                    r = c.post("/v1/jobs/x/review", json={"decision": "approve"}, headers={"Origin": origin})
                    assert r.status_code == 403 and "another site" in r.json()["detail"]
                    r = httpx.post(f"{srv.url}/jobs/x/review", data={"decision": "approve"},
                                   headers={"Origin": origin})
                    assert r.status_code == 403
                host = srv.url.removeprefix("http://")
                with srv.client(None) as anon:
                    r = anon.get("/v1/jobs", headers={"Host": host.replace("127.0.0.1", "localhost")})
                    assert r.status_code == (200 if srv is dev else 401), "a loopback name is always allowed"
    finally:
        dev.stop()
