"""Shared by the tests: the API server run as a real process, its tokens, job bodies and the SSE reader."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from patcher.config import SANDBOX_IMAGE
from patcher.review import generate_keypair
from patcher.testing import reply
from tests.support.example import FILES, FIX, PRODUCTION_TB
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]


ALICE = "alice-3f9a1c0d5e7b2a4c6e8f"


BOB = "bob-9b8a7c6d5e4f3a2b1c0d"


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
