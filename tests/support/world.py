"""Shared by the delivery tests, the end-to-end test and bench/crash_to_pr.py: the whole arrangement around a
running `patcher serve` — the shop's remote on git's smart HTTP behind a token, the scripted forge (GitHub
through PyGithub), two webhook receivers that check every delivery with `standardwebhooks`, the projects and
token files naming them — and the application under test that reports its crash with the real sentry-sdk."""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.testing import ScriptedForge
from tests.support.api import ApiServer
from tests.support.crashes import Receiver, dsn, project, projects_file, send_crash, shop_repo, tokens_file
from tests.support.helpers import git
from tests.support.private_servers import GitHandler, Recorder, basic, serving, url_of

TOKEN = "ghs_world0123456789abcdefghij"
API_TOKEN = "forge-world-0123456789abcd"
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
SLACK_SECRET = "whsec_" + base64.b64encode(b"fedcba9876543210fedcba9876543210").decode()


@dataclass
class World:
    server: ApiServer
    remote: Recorder
    forge: ScriptedForge
    hooks: Receiver
    slack: Receiver
    work: Path
    """The application's work tree (its commits are on the remote)."""

    @property
    def bare(self) -> Path:
        return self.server.home / "remotes" / "shop.git"

    def crash(self, release: str) -> None:
        send_crash(dsn(self.server.url), self.work, release)

    def job_of(self, release: str) -> str:
        with self.server.client() as c:
            jobs = c.get("/v1/jobs").json()["jobs"]
        return str(next(j["id"] for j in jobs if (j["crash"] or {}).get("release") == release))

    def delivery(self, job_id: str) -> dict[str, Any]:
        with self.server.client() as c:
            return dict(c.get(f"/v1/jobs/{job_id}/delivery").json())

    def new_release(self, name: str) -> str:
        """A new commit of the shop, on its remote too: the release a new deployment reports."""
        (self.work / f"{name}.txt").write_text(name)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", name)
        git(self.work, "push", "-q", str(self.bare), "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")


@contextmanager
def world(home: Path, workers: int = 0, hook_failures: int = 1, **env: str) -> Iterator[World]:
    """Everything started under `home`; `workers` 0 is an API node only (jobs are finished by hand)."""
    work, _ = shop_repo(home / "work")
    (home / "remotes").mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(home / "remotes" / "shop.git")], check=True)
    hooks, slack = Receiver(SECRET, fail=hook_failures), Receiver(SLACK_SECRET)
    try:
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
            server = ApiServer(home, "", PATCHER_WORKERS=str(workers), PATCHER_PROJECTS_FILE=str(files),
                               OPENAI_BASE_URL="", PATCHER_MODEL="", PATCHER_GIT_TOKENS_FILE=str(tokens),
                               PATCHER_ALLOW_PRIVATE_HOSTS="1", PATCHER_PUBLIC_URL="https://patcher.test",
                               **env).start()
            try:
                yield World(server, remote, forge, hooks, slack, work)
            finally:
                server.stop()
    finally:
        hooks.close()
        slack.close()


def until(check: Callable[[], Any], timeout: float = 60, every: float = 0.2) -> Any:
    """The first truthy value of `check()` within `timeout` seconds; AssertionError otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(every)
    raise AssertionError(f"not in {timeout} s")
