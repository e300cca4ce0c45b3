"""What an operator configures for delivery: where a project's verified diffs go as pull requests, and which
endpoints hear of jobs (signed webhooks). Both sit in the server's projects file (server/projects.py)."""

from __future__ import annotations

import base64
import re
from typing import Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

Forge = Literal["github", "gitlab", "gitea"]
EventType = Literal["job.submitted", "job.verified", "job.unjudged", "job.not_verified", "job.approved", "job.rejected",
                    "job.delivered", "job.failed"]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
DEFAULT_RETRY_S = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)
"""Waits after each failed attempt (the Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class DeliveryConfig(BaseModel):
    """A project's pull requests: each verified (or approved) job of it becomes one commit on the branch
    `patcher/<job id>`, pushed to `remote` with the service's own credentials, and a pull request on `forge`."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    forge: Forge
    """Where pull requests are opened: github (PyGithub), gitlab (python-gitlab; a merge request), gitea (its
    REST API; Forgejo too)."""
    when: Literal["verified", "approved"] = "verified"
    """Deliver as soon as a job is verified, or only once a reviewer approved it."""
    remote: str | None = None
    """The git URL pushed to (https or ssh); default: the project's repo when that is a URL."""
    repository: str | None = None
    """The repository on the forge (`owner/name`, a GitLab project path); default: the remote URL's path."""
    api_url: str | None = None
    """The forge's API; default: https://api.github.com for github.com, https://HOST/api/v3 for another GitHub,
    the remote's origin for GitLab, the remote's origin + /api/v1 for Gitea."""
    base: str = Field("main", pattern=r"^[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}$")
    """The branch the pull request asks to merge into."""
    draft: bool = False
    """Open pull requests as drafts."""
    author: str = Field("patcher <patcher@localhost>", pattern=r"^[^<>\n]+ <[^<>\s]+>$")
    """Author and committer of the commit, `Name <email>`."""
    timeout_s: float = Field(120.0, gt=0, le=3600)
    """How long the fetch and the push may take each."""

    @field_validator("remote", "api_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and "://" in value:
            parts = urlsplit(value)
            if parts.password or (parts.username and parts.scheme != "ssh"):
                raise ValueError("a URL here must not carry credentials: the service's own are used "
                                 "(PATCHER_GIT_TOKENS_FILE, PATCHER_GIT_SSH_KEY)")
            if parts.scheme not in ("https", "http", "ssh"):
                raise ValueError(f"{value}: only https, http and ssh URLs")
        return value

    def api(self, remote: str) -> str:
        """The forge API's base URL for pushes to `remote`."""
        if self.api_url:
            return self.api_url.rstrip("/")
        host = urlsplit(remote).netloc.rpartition("@")[2] if "://" in remote else remote.split("@")[-1].split(":")[0]
        scheme = urlsplit(remote).scheme if remote.startswith(("http://", "https://")) else "https"
        if self.forge == "github":
            return "https://api.github.com" if host.lower() == "github.com" else f"{scheme}://{host}/api/v3"
        return f"{scheme}://{host}" + ("/api/v1" if self.forge == "gitea" else "")

    def repository_of(self, remote: str) -> str:
        """`owner/name` on the forge for pushes to `remote`."""
        if self.repository:
            return self.repository.strip("/")
        path = urlsplit(remote).path if "://" in remote else remote.partition(":")[2]
        return path.strip("/").removesuffix(".git")


class WebhookEndpoint(BaseModel):
    """An endpoint told of job events, as JSON signed by the Standard Webhooks scheme, at least once."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(pattern=_NAME.pattern)
    """Shown on job pages beside each attempt."""
    url: str
    """Where the events are POSTed (http or https)."""
    secret: SecretStr
    """The signing secret, `whsec_` and base64 (as the receiver's Standard Webhooks library takes it)."""
    events: list[EventType] = Field(default_factory=lambda: list(EVENT_TYPES))
    """The events sent (default: all)."""
    projects: list[str] = Field(default_factory=list)
    """Only jobs of these projects (by name); empty: every job, also those submitted through the API."""
    format: Literal["standard", "slack"] = "standard"
    """`standard`: the event object; `slack`: a Slack-compatible message (`text` and `blocks`), signed the same."""
    retry_s: list[float] = Field(default_factory=lambda: list(DEFAULT_RETRY_S), min_length=0, max_length=20)
    """Waits after each failed attempt; when they run out (or the window closes) the message is given up."""
    window_s: float = Field(3 * 86400.0, gt=0)
    """No attempt starts later than this after the event."""
    timeout_s: float = Field(10.0, gt=0, le=60)
    """How long one attempt may take."""

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"webhook url {value!r} must be an http or https URL")
        return value

    @field_validator("secret")
    @classmethod
    def _whsec(cls, value: SecretStr) -> SecretStr:
        text = value.get_secret_value()
        try:
            key = base64.b64decode(text.removeprefix("whsec_"), validate=True)
        except ValueError:
            key = b""
        if not text.startswith("whsec_") or len(key) < 16:
            raise ValueError("a webhook secret is `whsec_` and the base64 of at least 16 random bytes "
                             "(e.g. `echo whsec_$(openssl rand -base64 32)`)")
        return value
