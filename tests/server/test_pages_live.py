"""The live review page and the submit form in real headless Chromium against a real `patcher serve`, with
a job driven by the scripted model server and held mid-run: the page follows the job's server-sent events
(rounds and tool calls appear while the model is held, its next reply as it streams, the attempt's row and
the finished view come when it ends) with no reload; with scripts disabled it falls back to reloading
itself; a job submitted from the job list's form runs the chosen engine and its page names it, with the
template search it ran."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from patcher.server.auth import COOKIE
from patcher.testing import ScriptedModelServer, reply
from tests.support.api import ALICE, BOB, HOSTILE, ROOT, ApiServer
from tests.support.browser import ARTIFACTS
from tests.support.greet import GREET, TRACEBACK
from tests.support.helpers import git, make_repo

pytestmark = [pytest.mark.docker]
LOOK = ("read_file", {"path": "greet/core.py"})
WRONG = ("edit_file", {"path": "greet/core.py", "old_text": "raise NotImplementedError('greet')",
                       "new_text": "return 'hello ' + name"})
RIGHT = ("edit_file", {"path": "greet/core.py", "old_text": "return 'hello ' + name",
                       "new_text": "return f'hello, {name}'"})


class Hold:
    """A model step that waits until released: the job stays mid-run while the page is looked at."""

    def __init__(self, then: Any) -> None:
        self.then, self.reached, self.released = then, threading.Event(), threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        self.reached.set()
        self.released.wait(120)
        return self.then


@pytest.fixture(scope="module")
def held() -> Iterator[tuple[ScriptedModelServer, Hold]]:
    hold = Hold(reply("The comma was missing.", [RIGHT], token_delay_s=0.3))  # streams for about 6 s
    script = [reply("Let me look.", [LOOK]), reply(None, [WRONG]), reply("Done."), hold, reply(HOSTILE)]
    with ScriptedModelServer(script) as model:
        yield model, hold
    hold.released.set()


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, held: tuple[ScriptedModelServer, Hold],
        sandbox_image: str) -> Iterator[ApiServer]:
    server = ApiServer(tmp_path_factory.mktemp("live"), held[0].base_url, PATCHER_SUBMITTERS="alice").start()
    yield server
    server.stop()


def signed_in(chromium: Any, srv: ApiServer, token: str = ALICE, **options: Any) -> Any:
    context = chromium.new_context(viewport={"width": 1280, "height": 1400}, **options)
    context.add_cookies([{"name": COOKIE, "value": token, "url": srv.url}])
    return context


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_the_page_follows_a_running_job_to_its_end_without_a_reload(
        browser: Any, srv: ApiServer, held: tuple[ScriptedModelServer, Hold]) -> None:
    _, hold = held
    repo = make_repo(srv.repos / "greet", GREET)
    body = {"repo": str(repo), "traceback": TRACEBACK, "test_command": "python -m pytest -q tests", "engine": "agent"}
    with srv.client() as c:
        job_id = c.post("/v1/jobs", json=body).json()["id"]
    live = signed_in(browser, srv)
    page = live.new_page()
    loads: list[str] = []
    errors: list[str] = []
    page.on("load", lambda p: loads.append(p.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{srv.url}/jobs/{job_id}")
        page.evaluate("window.__same_document = 'yes'")  # gone if the page ever reloads
        page.wait_for_selector("#rounds .tool b:text('read_file')", timeout=180_000)
        page.wait_for_selector(".attempt-row", timeout=180_000)  # the first diff, verified and rejected
        assert hold.reached.wait(60), "the model is held in round 4, after hearing why"
        assert page.get_attribute("#job", "data-finished") == "0"
        assert page.text_content("#job-state") == "running" and page.text_content("#live-status") == "(following live)"
        assert page.locator("details.round").count() == 3 and "Let me look." in page.inner_text("#rounds")
        assert page.locator("#steps .event").count() >= 3, "the verification steps came as they ran"
        row = page.locator(".attempt-row")
        assert row.count() == 1 and row.locator(".outcome").inner_text() == "tests_failed"
        assert page.locator("#diff").count() == 0, "a rejected diff is never shown as the diff"
        shot(page, "live-1-running.png")

        still = signed_in(browser, srv, java_script_enabled=False).new_page()
        still.goto(f"{srv.url}/jobs/{job_id}")
        assert still.locator('meta[http-equiv="refresh"]').count() == 1, "without scripts: today's reload"
        assert "(this page reloads every 5 s)" in still.inner_text("dl.facts")
        shot(still, "live-2-no-script.png")
        with still.expect_event("load", timeout=12_000):
            pass  # the refresh reloads it
        still.context.close()

        hold.released.set()
        page.wait_for_selector("#live-reply", timeout=60_000)  # the reply as it streams (model_stream)
        assert "the model is answering: " in page.text_content("#live-now")
        shot(page, "live-2b-streaming.png")
        page.wait_for_selector("#job[data-finished='1']", timeout=240_000)
        assert page.evaluate("window.__same_document") == "yes" and loads == [f"{srv.url}/jobs/{job_id}"]
        assert page.text_content("#job-status") == "verified" and page.url == f"{srv.url}/jobs/{job_id}"
        result = httpx.get(f"{srv.url}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {ALICE}"}).json()
        rows = page.locator(".attempt-row")
        assert rows.count() == 2 and [rows.nth(i).locator(".outcome").inner_text() for i in (0, 1)] == [
            "tests_failed", "verified"]
        assert rows.nth(1).locator("code").inner_text() == result["diff_sha256"][:12]
        assert rows.nth(0).locator("code").inner_text() == result["attempts"][0]["diff_sha256"][:12]
        assert page.text_content("#engine") == "agent" and page.locator("details.round").count() == 5
        assert HOSTILE in page.inner_text("#transcript") and page.evaluate("window.__pwned") is None
        assert "return f'hello, {name}'" in page.inner_text("#diff") and errors == []
        shot(page, "live-3-finished.png")
    finally:
        hold.released.set()
        live.close()


def test_a_job_is_submitted_from_the_job_list_and_its_page_names_the_engine(browser: Any, srv: ApiServer) -> None:
    repo = srv.repos / "pairs"
    shutil.copytree(ROOT / "examples/offline/off_by_one", repo, ignore=shutil.ignore_patterns("traceback.txt"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    context = signed_in(browser, srv)
    page = context.new_page()
    try:
        page.goto(srv.url + "/")
        page.click("#new-job summary")
        page.fill("input[name=repo]", "/etc")
        page.fill("textarea[name=traceback]", "Traceback <b>x</b>")
        page.click("button.submit")
        assert "outside the allowed roots" in page.text_content("#submit-error")
        assert page.input_value("textarea[name=traceback]") == "Traceback <b>x</b>", "the form keeps what was typed"
        page.fill("input[name=repo]", str(repo))
        page.fill("textarea[name=traceback]", (ROOT / "examples/offline/off_by_one/traceback.txt").read_text())
        page.fill("input[name=test_command]", "python -m pytest -q tests/test_pairs.py")
        page.select_option("select[name=engine]", "offline")
        shot(page, "submit-1-form.png")
        page.click("button.submit")
        page.wait_for_url("**/jobs/*")
        page.wait_for_selector("#job[data-finished='1']", timeout=240_000)
        assert page.text_content("#job-status") == "verified"
        assert page.text_content("#engine").startswith("offline") and page.locator("#agent").count() == 0
        assert "candidates tried" in page.text_content("#search-summary")
        shot(page, "submit-2-offline-finished.png")
    finally:
        context.close()

    bob = signed_in(browser, srv, BOB).new_page()
    bob.goto(srv.url + "/")
    assert bob.locator("#new-job").count() == 0, "a token without submit permission gets no form"
    bob.context.close()
    as_bob = httpx.post(f"{srv.url}/jobs", data={"repo": str(repo), "traceback": "x"}, cookies={COOKIE: BOB})
    assert as_bob.status_code == 403 and "may not submit" in as_bob.text
    cross = httpx.post(f"{srv.url}/jobs", data={"repo": str(repo), "traceback": "x"}, cookies={COOKIE: ALICE},
                       headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and "another site" in cross.text
    nobody = httpx.post(f"{srv.url}/jobs", data={"repo": str(repo), "traceback": "x"})
    assert nobody.status_code == 401 and "sign in" in nobody.text


def test_a_re_verification_page_names_what_it_re_verifies_and_the_approval_it_carries(
        browser: Any, srv: ApiServer) -> None:
    repo = srv.repos / "pairs-moved"
    shutil.copytree(ROOT / "examples/offline/off_by_one", repo, ignore=shutil.ignore_patterns("traceback.txt"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    body = {"repo": str(repo), "traceback": (ROOT / "examples/offline/off_by_one/traceback.txt").read_text(),
            "engine": "offline"}
    with srv.client() as c:
        job_id = c.post("/v1/jobs", json=body).json()["id"]
        assert srv.wait(job_id)["status"] == "verified"
        with srv.client(BOB) as b:
            assert b.post(f"/v1/jobs/{job_id}/review", json={"decision": "approve", "comment": "bound"}).is_success
        (repo / "NOTES.md").write_text("main moved on\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "main moves on")
        again = c.post(f"/v1/jobs/{job_id}/reverify", json={"ref": "main"}).json()["id"]
    context = signed_in(browser, srv)
    page = context.new_page()
    try:
        page.goto(f"{srv.url}/jobs/{again}")
        page.wait_for_selector("#job[data-finished='1']", timeout=240_000)
        assert page.text_content("#job-status") == "verified"
        assert f"the diff of job {job_id} on main" in page.inner_text("#reverifies")
        assert page.locator("#engine, #agent").count() == 0, "no engine ran, and the page does not say one did"
        carried = page.inner_text("#carried-approval")
        assert job_id in carried and "approve by bob" in carried
        shot(page, "reverify-finished.png")
        page.goto(srv.url + "/")
        assert f"reverify of {job_id}" in page.inner_text(f"tr:has(a:text('{again}'))")
    finally:
        context.close()
