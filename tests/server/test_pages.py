"""The review page in real headless Chromium (Debian's package, driven by Playwright) against a real server
running a real job: the diff and the verification table are shown (with the reviewer model's hint), an approval
is recorded with who and when, and the signed record then carries it. Hostile text from the model stays text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from patcher.review import statement_of
from patcher.review.attestation import check
from patcher.testing import ScriptedModelServer, reply
from tests.support.api import ALICE, BOB, HOSTILE, ApiServer
from tests.support.browser import ARTIFACTS
from tests.support.greet import GREET, TRACEBACK
from tests.support.helpers import make_repo

IMPLEMENT = ("edit_file", {"path": "greet/core.py", "old_text": "raise NotImplementedError('greet')",
                           "new_text": "return f'hello, {name}'"})

Job = tuple[ApiServer, str, dict[str, Any]]

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Job]:
    """A verified job that the model had to write (no fix template guesses an implementation)."""
    review = reply(json.dumps({"verdict": "tamper", "reason": HOSTILE,
                               "cites": [{"path": "greet/core.py", "line": 2, "why": HOSTILE}]}))
    with ScriptedModelServer([reply("Let me look.", [IMPLEMENT]), reply(HOSTILE), review]) as model:
        srv = ApiServer(tmp_path_factory.mktemp("browser"), model.base_url).start()
        try:
            repo = make_repo(srv.repos / "greet", GREET)
            body = {"repo": str(repo), "traceback": TRACEBACK, "test_command": "python -m pytest -q tests"}
            with srv.client() as c:
                job_id = c.post("/v1/jobs", json=body).json()["id"]
            result = srv.wait(job_id)
            assert result["status"] == "verified", result["message"]
            yield srv, job_id, result
        finally:
            srv.stop()


def test_a_reviewer_opens_a_verified_job_and_approves_it(browser: Any, job: Job) -> None:
    srv, job_id, result = job
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(srv.url + "/")
        page.wait_for_url("**/login?next=%2F")
        assert job_id not in page.content(), "no job data before signing in"
        page.fill("input[name=token]", "a-token-nobody-has-1234")
        page.click("button.sign-in")
        assert page.text_content("#login-error") == "the bearer token is not one this server knows"
        page.fill("input[name=token]", ALICE)
        page.click("button.sign-in")
        assert page.text_content("#who") == "alice"
        page.click(f"text={job_id}")
        page.wait_for_url(f"**/jobs/{job_id}")
        assert page.text_content("#job-status") == "verified"
        diff = page.locator("#diff .diff")
        assert "return f'hello, {name}'" in diff.inner_text()
        assert page.locator("#diff .diff .gi").count() >= 1, "added lines are highlighted"
        assert page.locator("#diff .diff .gd").count() >= 1, "removed lines are highlighted"
        assert (page.text_content("#repro-before"), page.text_content("#repro-after")) == ("failed", "passed")
        assert page.text_content("#fail-to-pass").strip() == "tests/test_greet.py::test_greet"
        assert "no regressions" in page.inner_text("#pass-to-pass") and page.inner_text("#flaky") == "none"
        assert result["agent"]["rounds"] == 2 and page.locator("details.round").count() == 2
        assert "edit_file" in page.inner_text("#transcript")
        tokens = result["agent"]["tokens"]
        assert page.text_content("#tokens") == f"{tokens['input']} in, {tokens['output']} out"
        assert HOSTILE in page.inner_text("#transcript"), "the model's hostile last word is text, never run"
        assert "reviewer · tamper: a reviewer model" in page.inner_text("#evidence"), "the reader's hint is shown"
        assert HOSTILE in page.inner_text("#evidence") and result["verification"]["judges"]["reviewer"]["ran"]
        assert page.evaluate("window.__pwned") is None and errors == []
        assert page.text_content("#no-reviews") == "Not reviewed yet."
        python = result["provenance"]["python"]
        assert f"{python['version']} in {python['image']}" in page.inner_text("#prov-python"), "what it ran on"

        page.fill("textarea[name=comment]", "Bound checked <b>by hand</b>")
        page.click("button.approve")  # as alice, who submitted it
        assert page.text_content("#review-error") == f"alice submitted job {job_id}, so someone else must approve it"
        assert page.locator(".review-row").count() == 0

        page.fill("textarea[name=comment]", "Bound checked <b>by hand</b>")
        page.fill("input[name=token]", BOB)
        page.click("button.approve")
        page.wait_for_url(f"**/jobs/{job_id}#review")
        page.reload()
        row = page.locator(".review-row")
        assert row.count() == 1
        assert (row.locator(".decision").inner_text(), row.locator(".who").inner_text(),
                row.locator(".comment").inner_text()) == ("approve", "bob", "Bound checked <b>by hand</b>")
        assert page.request.get(f"{srv.url}/v1/jobs/{job_id}/attestation").ok, "the signed-record link works"
        assert "UTC" in row.inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "review-page-approved.png"), full_page=True)
    finally:
        page.close()
    envelope = httpx.get(f"{srv.url}/v1/jobs/{job_id}/attestation", headers={"Authorization": f"Bearer {ALICE}"}
                         ).json()
    ok, why = check(result["diff"].encode(), envelope, srv.public_key.read_bytes(), require_approval=True)
    assert ok and "approved by bob" in why, why
    approval = statement_of(envelope)["predicate"]["patcher"]["approval"]
    assert (approval["who"], approval["comment"]) == ("bob", "Bound checked <b>by hand</b>")


def test_a_review_form_posted_from_another_site_is_refused(job: Job) -> None:
    srv, job_id, _ = job
    r = httpx.post(f"{srv.url}/jobs/{job_id}/review", data={"decision": "approve", "token": ALICE},
                   headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and "another site" in r.text
    page = httpx.get(f"{srv.url}/jobs/{job_id}", headers={"Authorization": f"Bearer {ALICE}"})
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self';" in csp and "unsafe" not in csp, "scripts only from the server's own files"
    assert "default-src 'none'" in csp
