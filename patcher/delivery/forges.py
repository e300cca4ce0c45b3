"""Pull requests through each forge's own client: GitHub with PyGithub, GitLab with python-gitlab (a merge
request), Gitea and Forgejo through their REST API (httpx). Each answers two questions: is there already a
pull request from this branch (so a retry never opens a second), and open one.

Calls are retried (tenacity, exponential backoff) on 5xx, 429 and broken connections; before each retry of
an open the forge is asked again whether the pull request exists, since a 502 may follow a request the forge
did carry out. The token is the service's own: the line of PATCHER_GIT_TOKENS_FILE for the API's origin,
else the one for the remote's.

    ForgeError   the forge refused or kept failing; the message says what it answered
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, urlsplit

import httpx
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from patcher.delivery.config import DeliveryConfig
from patcher.errors import BadInput

T = TypeVar("T")
ATTEMPTS = 4


class ForgeError(BadInput):
    """The forge's API refused, or kept failing after the retries."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str


class Forge(Protocol):
    def find(self, branch: str) -> PullRequest | None: ...
    def create(self, branch: str, base: str, title: str, body: str, draft: bool) -> PullRequest: ...


def open_pull_request(forge: Forge, branch: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
    """The pull request from `branch`: the one already open, or a new one (retried on transient failures)."""
    return _retrying(lambda: forge.find(branch) or forge.create(branch, base, title, body, draft))


def status_of(error: BaseException) -> int | None:
    """The HTTP status a client's exception carries (PyGithub, python-gitlab, httpx), None otherwise."""
    for name in ("status", "response_code"):
        value = getattr(error, name, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None) if response is not None else None


def _transient(error: BaseException) -> bool:
    import requests

    status = status_of(error)
    if status is not None:
        return status >= 500 or status == 429
    return isinstance(error, httpx.TransportError | requests.ConnectionError | requests.Timeout)


def _retrying(call: Callable[[], T]) -> T:
    attempt = retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(ATTEMPTS),
                    wait=wait_exponential(multiplier=0.5, max=8), reraise=True)(call)
    try:
        return attempt()
    except ForgeError:
        raise
    except Exception as e:  # the client's own errors, named with what the forge answered
        status = status_of(e)
        raise ForgeError(f"the forge answered {status}: {_said(e)}" if status else f"the forge failed: {e}") from e


def _said(error: BaseException) -> str:
    data = getattr(error, "data", None) or getattr(error, "error_message", None) or str(error)
    return str(data)[:300]


def forge_for(config: DeliveryConfig, remote: str, tokens: dict[str, tuple[str, str]], timeout_s: float) -> Forge:
    """The client for the project's forge, with the service's token for its API."""
    api = config.api(remote)
    found = tokens.get(_origin(api)) or tokens.get(_origin(remote))
    token = found[1] if found else None
    repository = config.repository_of(remote)
    if config.forge == "github":
        return GitHubForge(api, repository, token, timeout_s)
    if config.forge == "gitlab":
        return GitLabForge(api, repository, token, timeout_s)
    return GiteaForge(api, repository, token, timeout_s)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2].lower()}"


class GitHubForge:
    def __init__(self, api: str, repository: str, token: str | None, timeout_s: float) -> None:
        from github import Auth, Github

        self.owner = repository.split("/", 1)[0]
        self.client = Github(auth=Auth.Token(token) if token else None, base_url=api, timeout=int(timeout_s),
                             retry=None, lazy=True, seconds_between_requests=None, seconds_between_writes=None)
        self.repo = self.client.get_repo(repository)

    def find(self, branch: str) -> PullRequest | None:
        for pr in self.repo.get_pulls(state="all", head=f"{self.owner}:{branch}"):
            return PullRequest(pr.number, pr.html_url)
        return None

    def create(self, branch: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        pr = self.repo.create_pull(base=base, head=branch, title=title, body=body, draft=draft)
        return PullRequest(pr.number, pr.html_url)


class GitLabForge:
    def __init__(self, api: str, repository: str, token: str | None, timeout_s: float) -> None:
        import gitlab

        self.client = gitlab.Gitlab(url=api, private_token=token, timeout=timeout_s, retry_transient_errors=False)
        self.project = self.client.projects.get(repository, lazy=True)

    def find(self, branch: str) -> PullRequest | None:
        for mr in self.project.mergerequests.list(source_branch=branch, state="all", get_all=False):
            return PullRequest(int(mr.iid), str(mr.web_url))
        return None

    def create(self, branch: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        mr: Any = self.project.mergerequests.create({"source_branch": branch, "target_branch": base,
                                                      "title": f"Draft: {title}" if draft else title,
                                                      "description": body})
        return PullRequest(int(mr.iid), str(mr.web_url))


class GiteaForge:
    """Gitea and Forgejo (the same API): /api/v1/repos/{owner}/{repo}/pulls."""

    PAGES = 5

    def __init__(self, api: str, repository: str, token: str | None, timeout_s: float) -> None:
        self.path = "/repos/" + "/".join(quote(p, safe="") for p in repository.split("/", 1))
        headers = {"Authorization": f"token {token}"} if token else {}
        self.client = httpx.Client(base_url=api, headers=headers, timeout=timeout_s)

    def find(self, branch: str) -> PullRequest | None:
        for page in range(1, self.PAGES + 1):
            r = self.client.get(f"{self.path}/pulls", params={"state": "all", "limit": 50, "page": page})
            r.raise_for_status()
            pulls = r.json()
            for pr in pulls:
                if (pr.get("head") or {}).get("ref") == branch:
                    return PullRequest(int(pr["number"]), str(pr["html_url"]))
            if len(pulls) < 50:
                return None
        return None

    def create(self, branch: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        r = self.client.post(f"{self.path}/pulls", json={"head": branch, "base": base, "body": body,
                                                          "title": f"WIP: {title}" if draft else title})
        r.raise_for_status()
        pr = r.json()
        return PullRequest(int(pr["number"]), str(pr["html_url"]))
