"""`patcher serve` against a real uvicorn process on loopback: a real SQLite file, real Docker, and the
scripted model server (a real HTTP server) whose base URL reaches the server through its environment."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from patcher.config import SANDBOX_IMAGE
from patcher.errors import BadInput
from patcher.review import generate_keypair, run_gate, statement_of
from patcher.review.attestation import check
from patcher.server import load_settings
from patcher.testing import ScriptedModelServer, reply
from tests.helpers import git, make_repo
from tests.test_e2e import FILES, FIX, PRODUCTION_TB

ROOT = Path(__file__).resolve().parents[1]
ALICE = "alice-3f9a1c0d5e7b2a4c6e8f"
BOB = "bob-9b8a7c6d5e4f3a2b1c0d"
CONTRACT = {"run_id", "status", "reason", "message", "diff", "diff_sha256", "base_commit", "files_changed",
            "verification", "agent", "attempts", "warnings", "trace", "provenance"}
REPRO = "python -m pytest -q tests/test_pagination.py"
HOSTILE = "Fixed the bound. <script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


def fixer(body: dict[str, Any]) -> Any:
    """The model's part, stateless so that concurrent and repeated runs each get a whole script: the fix
    first, then a last word once a tool has answered."""
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return reply(HOSTILE)
    return reply(None, [FIX])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ApiServer:
    """`patcher serve` (the `serve()` behind it) in a subprocess with its own home, database and tokens."""

    def __init__(self, home: Path, model_url: str, **env: str) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.repos = home / "repos"
        self.repos.mkdir(exist_ok=True)
        self.public_key = home / "signer.pub.pem"
        if not self.public_key.exists():
            generate_keypair(home / "signer.pem", self.public_key)
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHER_", "OPENAI_"))}
        self.env = clean | {
            "PATCHER_HOME": str(home / "home"), "PATCHER_DATABASE_URL": f"sqlite:///{home / 'jobs.db'}",
            "PATCHER_TOKENS": f"alice:{ALICE},bob:{BOB}", "PATCHER_SIGNING_KEY": str(home / "signer.pem"),
            "PATCHER_REPO_ROOTS": str(self.repos), "PATCHER_SANDBOX_IMAGE": SANDBOX_IMAGE, "PATCHER_WORKERS": "1",
            "OPENAI_BASE_URL": model_url, "PATCHER_MODEL": "scripted-model", **env}
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> ApiServer:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        with (self.home / "server.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from patcher.server.app import serve; serve('127.0.0.1', {port})"],
                env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the server exited: {self.log()}"
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"the server did not answer in 60 s: {self.log()}")

    def log(self) -> str:
        return (self.home / "server.log").read_text(errors="replace")[-4000:]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self, token: str | None = ALICE) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def repo(self, name: str = "shop") -> Path:
        path = self.repos / name
        return path if path.exists() else make_repo(path, FILES)

    def wait(self, job_id: str, done: Callable[[httpx.Response], bool] | None = None, timeout: float = 240
             ) -> dict[str, Any]:
        done = done or (lambda r: r.headers["X-Patcher-Job-State"] in ("done", "failed", "cancelled"))
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while time.monotonic() < deadline:
                r = c.get(f"/v1/jobs/{job_id}")
                assert r.status_code == 200, r.text
                if done(r):
                    return dict(r.json())
                time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not finish: {c.get(f'/v1/jobs/{job_id}').text}\n{self.log()}")


def job_body(repo: Path, **extra: Any) -> dict[str, Any]:
    return {"repo": str(repo), "traceback": PRODUCTION_TB, "test_command": REPRO} | extra


def read_sse(client: httpx.Client, path: str, last_id: int | None = None, stop_after: int | None = None
             ) -> list[dict[str, Any]]:
    """SSE messages (id, event, data) until the server ends the stream or `stop_after` messages with an id."""
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", path, headers=headers, timeout=httpx.Timeout(30, read=120)) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line == "":
                if "data" in current:
                    messages.append(current)
                    if stop_after is not None and sum("id" in m for m in messages) >= stop_after:
                        return messages
                current = {}
            elif not line.startswith(":"):
                field, _, value = line.partition(":")
                current[field] = value.removeprefix(" ")
    return messages


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([fixer] * 200) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer) -> Iterator[ApiServer]:
    srv = ApiServer(tmp_path_factory.mktemp("serve"), model.base_url, PATCHER_MAX_BODY_BYTES="200000",
                    PATCHER_MAX_TRACEBACK_BYTES="50000").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def verified(server: ApiServer, sandbox_image: str) -> dict[str, Any]:
    """One real job run to the end: (id, result)."""
    with server.client() as c:
        r = c.post("/v1/jobs", json=job_body(server.repo()), headers={"Idempotency-Key": "verified-1"})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    return {"id": job_id, "result": server.wait(job_id)}


@pytest.mark.docker
def test_submit_poll_and_the_result_is_the_fix_json_contract(server: ApiServer, verified: dict[str, Any]) -> None:
    result = verified["result"]
    assert set(result) == CONTRACT, "GET /v1/jobs/{id} is the `patcher fix --json` object"
    assert (result["status"], result["reason"]) == ("verified", "verified"), result["message"]
    assert "+    return [items[i] for i in range(start, min(end, len(items)))]" in result["diff"]
    assert result["verification"]["reproduction"] == {"command": REPRO, "before": "failed", "after": "passed"}
    assert result["verification"]["fail_to_pass"] == ["tests/test_pagination.py::test_last_page"]
    assert result["files_changed"] == ["shop/pagination.py"]
    assert Path(result["trace"]).parent == server.home / "home" / "jobs" / verified["id"]
    with server.client(BOB) as c:
        listed = c.get("/v1/jobs", params={"state": "done"}).json()["jobs"]
        assert any(j["id"] == verified["id"] and j["status"] == "verified" and j["submitter"] == "alice"
                   for j in listed)
        assert c.get("/v1/jobs", params={"state": "running"}).json()["jobs"] == []
        envelope = c.get(f"/v1/jobs/{verified['id']}/attestation").json()
    pem = server.public_key.read_bytes()
    ok, why = check(result["diff"].encode(), envelope, pem)
    assert ok, why
    ok, why = check(result["diff"].encode(), envelope, pem, require_approval=True)
    assert not ok and why.startswith("approval:")
    ok, why = check(result["diff"].encode() + b"\n", envelope, pem)
    assert not ok and why.startswith("digest:")
    ext = statement_of(envelope)["predicate"]["patcher"]
    repo = server.repo()
    assert (ext["tree"], ext["source_commit"], ext["dirty"]) == (git(repo, "rev-parse", "HEAD^{tree}"),
                                                                 git(repo, "rev-parse", "HEAD"), False)
    assert ext["submitter"] == "alice" and ext["reproduction"]["source"] == "user"
    assert ext["image_id"].startswith("sha256:") and ext["patcher_version"] and ext["result_tree"] != ext["tree"]
    (server.home / "fix.diff").write_text(result["diff"])
    (server.home / "record.json").write_text(json.dumps(envelope))
    code, line = run_gate(server.home / "fix.diff", server.home / "record.json", server.public_key, repo=repo,
                          suite="python -m pytest -q")
    assert code == 0, line


@pytest.mark.docker
def test_review_re_signs_the_record_with_who_and_the_decision(server: ApiServer, verified: dict[str, Any]) -> None:
    job_id, diff = verified["id"], verified["result"]["diff"].encode()
    with server.client(BOB) as c:
        r = c.post(f"/v1/jobs/{job_id}/review", json={"decision": "reject", "comment": "wrong layer"})
        assert r.status_code == 200, r.text
        assert r.json()["review"]["who"] == "bob"
        ok, why = check(diff, r.json()["attestation"], server.public_key.read_bytes(), require_approval=True)
        assert not ok and "bob decided 'reject'" in why
    with server.client(ALICE) as c:
        own = c.post(f"/v1/jobs/{job_id}/review", json={"decision": "approve", "comment": "mine, LGTM"})
        assert own.status_code == 403 and "someone else must approve" in own.json()["detail"]
    with server.client(BOB) as c:
        r = c.post(f"/v1/jobs/{job_id}/review", json={"decision": "approve", "comment": "LGTM"})
        envelope = c.get(f"/v1/jobs/{job_id}/attestation").json()
    assert r.status_code == 200 and envelope == r.json()["attestation"]
    ok, why = check(diff, envelope, server.public_key.read_bytes(), require_approval=True)
    assert ok and "approved by bob" in why, why
    approval = statement_of(envelope)["predicate"]["patcher"]["approval"]
    assert (approval["decision"], approval["who"], approval["comment"]) == ("approve", "bob", "LGTM")


@pytest.mark.docker
def test_events_stream_live_and_resume_after_last_event_id(server: ApiServer, sandbox_image: str) -> None:
    with server.client() as c:
        job_id = c.post("/v1/jobs", json=job_body(server.repo(), ref="main")).json()["id"]
        first = read_sse(c, f"/v1/jobs/{job_id}/events", stop_after=2)  # while the job runs
        resumed = read_sse(c, f"/v1/jobs/{job_id}/events", last_id=int(first[-1]["id"]))
        again = read_sse(c, f"/v1/jobs/{job_id}/events", last_id=3)
    messages = [m for m in first + resumed if "id" in m]
    seqs = [int(m["id"]) for m in messages]
    assert seqs == list(range(1, len(seqs) + 1)), "no gaps, no duplicates"
    events = [json.loads(m["data"]) for m in messages]
    assert [e["seq"] for e in events] == seqs
    assert [m["event"] for m in messages] == [e["type"] for e in events]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "run_end"
    assert {"verify"} <= {e["type"] for e in events}
    result = server.wait(job_id)
    on_disk = [json.loads(line) for line in Path(result["trace"]).read_text().splitlines()]
    assert {e.pop("job_attempt") for e in events} == {1}
    assert events == on_disk, "the stream is the trace, whole"
    assert [int(m["id"]) for m in again] == seqs[3:]


@pytest.mark.docker
def test_cancel_a_queued_job(server: ApiServer, sandbox_image: str) -> None:
    with server.client() as c:
        busy = c.post("/v1/jobs", json=job_body(server.repo(), test_command=REPRO + " -x")).json()["id"]
        server.wait(busy, lambda r: r.headers["X-Patcher-Job-State"] == "running", timeout=30)
        queued = c.post("/v1/jobs", json=job_body(server.repo(), test_command=REPRO + " -q")).json()["id"]
        r = c.post(f"/v1/jobs/{queued}/cancel")
        assert r.status_code == 200 and r.json() == {"id": queued, "state": "cancelled"}
        view = c.get(f"/v1/jobs/{queued}").json()
        assert view == {"id": queued, "state": "cancelled", "message": "cancelled before it started"}
        end = read_sse(c, f"/v1/jobs/{queued}/events")
        assert [m["event"] for m in end] == ["end"] and json.loads(end[0]["data"])["state"] == "cancelled"
        assert c.get(f"/v1/jobs/{queued}/attestation").status_code == 404
        assert c.post(f"/v1/jobs/{queued}/review", json={"decision": "approve"}).status_code == 403, "her own"
        with server.client(BOB) as bob:
            assert bob.post(f"/v1/jobs/{queued}/review", json={"decision": "approve"}).status_code == 409
        assert c.post(f"/v1/jobs/{busy}/cancel").json() == {"id": busy, "state": "running"}  # a flag it polls
    server.wait(busy)
    with server.client() as c:
        r = c.get(f"/v1/jobs/{busy}")
    assert r.headers["X-Patcher-Job-State"] == "cancelled" and set(r.json()) == CONTRACT


def test_every_route_with_job_data_needs_a_known_token(server: ApiServer) -> None:
    with server.client() as c:  # a real job, so that a 401 cannot be a 404 in disguise
        job_id = c.post("/v1/jobs", json={"repo": str(server.repo()), "traceback": "no traceback"}).json()["id"]
    server.wait(job_id)
    body = job_body(server.repo())
    routes = [("POST", "/v1/jobs", body), ("POST", f"/v1/jobs/{job_id}/cancel", None),
              ("POST", f"/v1/jobs/{job_id}/review", {"decision": "approve"}), ("GET", "/v1/jobs", None),
              ("GET", f"/v1/jobs/{job_id}", None), ("GET", f"/v1/jobs/{job_id}/events", None),
              ("GET", f"/v1/jobs/{job_id}/attestation", None)]
    with server.client(None) as anon, server.client("not-a-token-of-this-server") as stranger:
        for c, code in ((anon, 401), (stranger, 403)):
            for method, path, payload in routes:
                r = c.request(method, path, json=payload)
                assert r.status_code == code, (method, path, r.text)
                assert "token" in r.json()["detail"] and job_id not in r.text
        r = anon.post("/v1/jobs", json=body)
        assert r.headers["WWW-Authenticate"] == "Bearer"
        assert anon.post("/v1/jobs", json=body, headers={"Authorization": "Basic YTpi"}).status_code == 401
        for page in ("/", f"/jobs/{job_id}"):
            r = anon.get(page, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
            r = httpx.get(server.url + page, cookies={"patcher_token": "not-a-token-of-this-server"},
                          follow_redirects=True)
            assert r.url.path == "/login" and job_id not in r.text.replace(f'value="/jobs/{job_id}"', "")
        r = anon.post(f"/jobs/{job_id}/review", data={"decision": "approve"})
        assert r.status_code == 401 and job_id not in r.text.replace(f"/jobs/{job_id}", "")
    assert "/v1/jobs/{job_id}/events" in httpx.get(f"{server.url}/openapi.json").json()["paths"]
    with server.client(BOB) as c:
        assert c.get(f"/v1/jobs/{job_id}").status_code == 200, "any known token reads"
    signed_in = httpx.get(f"{server.url}/jobs/{job_id}", cookies={"patcher_token": ALICE})
    assert signed_in.status_code == 200 and job_id in signed_in.text


def test_bad_input_is_a_4xx_with_a_message(server: ApiServer, tmp_path: Path) -> None:
    repo = str(server.repo())
    cases: list[tuple[Any, int, str]] = [
        (job_body(Path(repo)) | {"traceback": "x" * 300_000}, 413, "larger than 200000 bytes"),
        (job_body(Path(repo)) | {"traceback": "x" * 60_000}, 413, "traceback is 60000 bytes"),
        (job_body(Path(repo)) | {"model": {"api_key": "sk-mine"}}, 422, "body.model: Extra inputs are not permitted"),
        (job_body(Path(repo)) | {"limits": {"max_rounds": 0}}, 422, "body.limits.max_rounds"),
        ({"repo": repo}, 422, "body.traceback: Field required"),
        (job_body(tmp_path), 400, "outside the allowed roots"),
        (job_body(Path(repo + "/../../..")), 400, "outside the allowed roots"),
        (job_body(Path("shop")), 400, "must be absolute"),
        (job_body(Path(repo)) | {"repo": "file:///etc"}, 400, "only https, http, ssh and git URLs"),
        (job_body(Path(repo)) | {"repo": "ext::sh -c id"}, 400, "only https, http, ssh and git URLs"),
        (job_body(Path(repo)) | {"ref": "--upload-pack=touch /tmp/x"}, 422, "body.ref"),
    ]
    with server.client() as c:
        for body, code, words in cases:
            r = c.post("/v1/jobs", json=body)
            assert (r.status_code, words in r.json()["detail"]) == (code, True), (words, r.status_code, r.text)
        r = c.post("/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and "JSON decode error" in r.json()["detail"]
        assert c.post("/v1/jobs", json=job_body(Path(repo)), headers={"Idempotency-Key": "k" * 300}).status_code == 400
        assert c.get("/v1/jobs/no-such-job").status_code == 404
        assert c.get("/v1/jobs/no-such-job/events").status_code == 404
        assert c.get("/v1/jobs", params={"state": "lost"}).status_code == 422
        assert c.get("/v1/jobs", params={"limit": 0}).status_code == 422
        assert c.post("/v1/jobs/no-such-job/review", json={"decision": "approve"}).status_code == 404
        r = c.post("/v1/jobs/no-such-job/review", json={"decision": "maybe"})
        assert r.status_code == 422 and "body.decision" in r.json()["detail"]


def test_the_same_idempotency_key_gives_the_same_job(server: ApiServer) -> None:
    body = {"repo": str(server.repo()), "traceback": "this is no traceback"}  # fails fast, no container
    with server.client() as c:
        first = c.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-123"})
        second = c.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-123"})
        other = c.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-124"})
        clash = c.post("/v1/jobs", json=body | {"ref": "main"}, headers={"Idempotency-Key": "abc-123"})
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["id"] == second.json()["id"] != other.json()["id"]
    assert (first.headers["Idempotent-Replayed"], second.headers["Idempotent-Replayed"]) == ("false", "true")
    assert clash.status_code == 409 and "abc-123" in clash.json()["detail"]
    result = server.wait(first.json()["id"])
    assert (result["status"], result["reason"]) == ("error", "bad_input")


@pytest.mark.docker
def test_a_server_killed_mid_job_loses_nothing(tmp_path: Path, model: ScriptedModelServer,
                                               sandbox_image: str) -> None:
    srv = ApiServer(tmp_path, model.base_url).start()
    try:
        with srv.client() as c:
            first = c.post("/v1/jobs", json=job_body(srv.repo())).json()["id"]
            second = c.post("/v1/jobs", json=job_body(srv.repo(), ref="main")).json()["id"]
        jobs_dir = tmp_path / "home" / "jobs" / first
        deadline = time.monotonic() + 120
        while not any(len(p.read_text().splitlines()) >= 2 for p in jobs_dir.glob("*.jsonl")):
            assert time.monotonic() < deadline, srv.log()
            time.sleep(0.05)
        srv.stop(signal.SIGKILL)  # mid-job: after the baseline, before the result
        srv.start()
        results = {job_id: srv.wait(job_id) for job_id in (first, second)}
        with srv.client() as c:
            states = {j["id"]: (j["state"], j["attempts"]) for j in c.get("/v1/jobs").json()["jobs"]}
            events = read_sse(c, f"/v1/jobs/{first}/events")
    finally:
        srv.stop()
    assert states == {first: ("done", 2), second: ("done", 1)}, ("re-run after the crash, nothing stuck or lost",
                                                                  results, srv.log())
    assert all(r["status"] == "verified" for r in results.values()), results
    assert len(list(jobs_dir.glob("*.jsonl"))) == 2, "the interrupted attempt's trace is kept"
    assert [int(m["id"]) for m in events] == list(range(1, len(events) + 1)) and events[-1]["event"] == "run_end"
    attempts = [json.loads(m["data"])["job_attempt"] for m in events]
    assert attempts == sorted(attempts) and attempts[0] == 1 and attempts[-1] == 2, "ids go on across the crash"
    assert [m["event"] for m in events].count("run_start") == 2


@pytest.mark.parametrize("env,words", [
    ({}, "PATCHER_TOKENS is not set"),
    ({"PATCHER_TOKENS": "alice:changeme"}, "looks like a placeholder"),
    ({"PATCHER_TOKENS": "alice:short"}, "shorter than 16"),
    ({"PATCHER_TOKENS": f"alice:{ALICE}"}, "PATCHER_SIGNING_KEY is not set"),
    ({"PATCHER_DEV": "1", "PATCHER_REPO_ROOTS": "relative/dir"}, "PATCHER_REPO_ROOTS: repo root relative/dir"),
    ({"PATCHER_DEV": "1", "OPENAI_API_KEY": "sk-..."}, "placeholder"),
])
def test_unsafe_settings_are_refused_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               env: dict[str, str], words: str) -> None:
    for name in list(os.environ):
        if name.startswith(("PATCHER_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(BadInput, match="settings") as e:
        load_settings()
    assert words in str(e.value)


def test_a_signing_key_others_can_read_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("PATCHER_", "OPENAI_")):
            monkeypatch.delenv(name)
    generate_keypair(tmp_path / "key.pem")
    (tmp_path / "key.pem").chmod(0o644)
    with pytest.raises(BadInput, match="readable by no one else"):
        load_settings(home=tmp_path, tokens={"alice": ALICE}, signing_key=tmp_path / "key.pem")
    (tmp_path / "key.pem").chmod(0o600)
    assert load_settings(home=tmp_path, tokens={"alice": ALICE}, signing_key=tmp_path / "key.pem").signing_key


def test_dev_mode_starts_without_tokens_and_makes_a_signing_key(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("PATCHER_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    monkeypatch.setenv("PATCHER_DEV", "1")
    monkeypatch.setenv("PATCHER_TOKENS", json.dumps({"ci-bot": BOB}))
    settings = load_settings()
    assert settings.dev and list(settings.tokens) == ["ci-bot"] and settings.model_settings() is None
    assert settings.key_path() == tmp_path / "signing-key.pem" and settings.key_path().stat().st_mode & 0o077 == 0
