"""Crash intake on a running `patcher serve` (API only: jobs are queued, not run): an application using the
real sentry-sdk sends its crash; the server answers as Sentry does, opens one job per crash and release,
counts the same crash on it, and stores nothing of a malformed, oversized, unauthenticated or replayed request."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from patcher.server.store import Store
from tests.support.api import ApiServer
from tests.support.crashes import KEY, OTHER_KEY, captured, dsn, project, projects_file, send_crash, shop_repo


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    home = tmp_path_factory.mktemp("sentry")
    (home / "repos").mkdir()
    repo, _ = shop_repo(home / "repos" / "shop")
    other = {"id": 2, "name": "other", "keys": [OTHER_KEY], "repo": str(repo), "rate_limit": 2,
             "rate_window_s": 3600}
    small = {"id": 3, "name": "small", "keys": ["3" * 32], "repo": str(repo), "limits": {"max_event_bytes": 2048}}
    path = projects_file(home / "projects.json", [project(str(repo)), other, small])
    srv = ApiServer(home, "", PATCHER_WORKERS="0", PATCHER_PROJECTS_FILE=str(path), OPENAI_BASE_URL="",
                    PATCHER_MODEL="").start()
    yield srv
    srv.stop()


def commit_of(server: ApiServer) -> str:
    from tests.support.helpers import git

    return git(server.repos / "shop", "rev-parse", "HEAD")


def crash_jobs(server: ApiServer) -> list[dict[str, Any]]:
    with server.client() as c:
        return [j for j in c.get("/v1/jobs", params={"limit": 500}).json()["jobs"] if j["crash"]]


def post(server: ApiServer, sent: tuple[str, dict[str, str], bytes], **changes: Any) -> httpx.Response:
    path, headers, body = sent
    keep = {k: v for k, v in headers.items() if k.lower() in ("x-sentry-auth", "content-encoding", "content-type")}
    return httpx.post(server.url + changes.pop("path", path), content=changes.pop("body", body),
                      headers=keep | changes.pop("headers", {}), timeout=30, **changes)


def test_a_crash_from_the_sdk_opens_one_job_and_the_same_crash_again_is_counted_on_it(server: ApiServer) -> None:
    repo, release = server.repos / "shop", commit_of(server)
    send_crash(dsn(server.url), repo, release)
    jobs = crash_jobs(server)
    assert len(jobs) == 1, jobs
    job = jobs[0]
    assert (job["submitter"], job["ref"], job["crash"]["project"], job["crash"]["release"], job["crash"]["count"]) \
        == ("crash:shop", release, "shop", release, 1)
    assert job["crash"]["title"] == "IndexError: list index out of range"
    spec = Store(server.env["PATCHER_DATABASE_URL"]).get(job["id"])
    assert spec is not None
    traceback = spec.spec["traceback"]
    assert '/shop/pagination.py", line 12, in page' in traceback and "    number = 3" in traceback, traceback
    assert "tok-3f9a1c0d5e7b2a4c6e8f10" not in traceback and KEY not in traceback
    assert spec.spec["test_command"] == "python -m pytest -q tests/test_pagination.py"
    assert spec.spec["engine"] == "offline"

    send_crash(dsn(server.url), repo, release)  # a new event of the same crash
    again = crash_jobs(server)
    assert [j["id"] for j in again] == [job["id"]] and again[0]["crash"]["count"] == 2
    assert again[0]["crash"]["last_seen"] > again[0]["crash"]["first_seen"]
    with server.client() as c:
        page = c.get(f"/jobs/{job['id']}").text
    assert 'id="crash-count">2<' in page and release in page

    send_crash(dsn(server.url), repo, "0" * 40)  # the crash in another release: a job of its own
    newer = crash_jobs(server)
    assert len(newer) == 2 and newer[0]["crash"]["release"] == "0" * 40 and newer[0]["crash"]["count"] == 1


def test_a_replayed_event_is_answered_and_stores_nothing(server: ApiServer) -> None:
    sent = captured(server.repos / "shop", "1" * 40, call="page([], 1, 'x')")
    first = post(server, sent)
    assert first.status_code == 200 and first.headers["x-patcher-outcome"] == "opened", first.text
    before = crash_jobs(server)
    again = post(server, sent)
    assert again.status_code == 200 and again.json() == first.json(), again.text
    assert again.headers["x-patcher-outcome"] == "replayed"
    assert crash_jobs(server) == before


def test_the_store_endpoint_takes_one_gzip_event(server: ApiServer) -> None:
    _, headers, body = captured(server.repos / "shop", "2" * 40, call="page([1], 1, None)")
    event = gzip.decompress(body).split(b"\n")[2]
    r = httpx.post(f"{server.url}/api/1/store/", content=gzip.compress(event),
                   headers={"X-Sentry-Auth": headers["X-Sentry-Auth"], "Content-Encoding": "gzip"})
    assert r.status_code == 200 and r.headers["x-patcher-outcome"] == "opened", r.text
    assert any(j["crash"]["release"] == "2" * 40 for j in crash_jobs(server))


@pytest.mark.parametrize(("change", "status", "words"), [
    ({"headers": {"X-Sentry-Auth": "Sentry sentry_version=7"}}, 401, "missing authorization"),
    ({"headers": {"X-Sentry-Auth": "Sentry sentry_key=" + "f" * 32}}, 403, "may not send"),
    ({"headers": {"X-Sentry-Auth": f"Sentry sentry_key={OTHER_KEY}"}}, 403, "may not send"),
    ({"path": "/api/9/envelope/"}, 403, "may not send"),
    ({"body": b"\x1f\x8b garbage"}, 400, "cannot be decompressed"),
    ({"body": gzip.compress(b'{"event_id": "' + b"e" * 32 + b'"}\n{"type":"event","length":5}\n{"a":')}, 400,
     "not JSON"),
    ({"body": gzip.compress(b"{}\n" + b"x" * 2_000_000)}, 413, "larger than"),
    ({"headers": {"Content-Encoding": "br"}}, 400, "not supported"),
])
def test_bad_requests_get_their_answer_and_store_nothing(server: ApiServer, change: dict[str, Any], status: int,
                                                         words: str) -> None:
    sent = captured(server.repos / "shop", "3" * 40, call="page(None, 1, 1)")
    before = crash_jobs(server)
    r = post(server, sent, **change)
    assert r.status_code == status and words in r.json()["detail"], r.text
    assert crash_jobs(server) == before


def test_a_body_over_the_server_limit_is_refused_unread(server: ApiServer) -> None:
    r = httpx.post(f"{server.url}/api/1/envelope/?sentry_key={KEY}", content=b"x" * 1_100_000)
    assert r.status_code == 413


def test_an_event_larger_than_its_project_takes_is_refused(server: ApiServer) -> None:
    sent = captured(server.repos / "shop", "4" * 40, key="3" * 32, project_id=3)
    r = post(server, sent)
    assert r.status_code == 413 and "2048" in r.json()["detail"], r.text


def test_over_the_rate_the_sdk_is_told_when_to_come_back(server: ApiServer) -> None:
    answers = [post(server, captured(server.repos / "shop", f"{n}" * 40, key=OTHER_KEY, project_id=2))
               for n in (5, 6, 7)]
    assert [a.status_code for a in answers] == [200, 200, 429], [a.text for a in answers]
    assert int(answers[2].headers["retry-after"]) > 3000
    assert answers[2].headers["x-sentry-rate-limits"].endswith("::organization")


def test_a_release_that_cannot_name_a_ref_is_refused(server: ApiServer) -> None:
    sent = captured(server.repos / "shop", "--upload-pack=touch-x", call="page(None, 2, 2)")
    r = post(server, sent)
    assert r.status_code == 400 and "cannot name a git ref" in r.json()["detail"], r.text
