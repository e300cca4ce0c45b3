"""The operator's projects file (PATCHER_PROJECTS_FILE, TOML or JSON): which crash reports the server takes
and what it does with them, and the webhook endpoints it tells of jobs. Never set by an event or a job.

    [[projects]]
    id = 1                                   # the DSN's project: http://KEY@patcher.example.com/1
    name = "shop"
    keys = ["4f0b…"]                         # DSN public keys (at least 16 characters each)
    repo = "https://git.example.com/team/shop.git"       # or a path under PATCHER_REPO_ROOTS
    ref = "v{release}"                       # the deployed commit: {release}, {version} (after the last @)
    job = { test_command = "python -m pytest -q tests/test_pagination.py", engine = "offline" }
    delivery = { forge = "github", when = "verified", base = "main" }

    [[webhooks]]
    name = "ops"
    url = "https://hooks.example.com/patcher"
    secret = "whsec_…"

The file holds credentials (DSN keys, webhook secrets), so like the tokens file it must be owned by the
server's user and readable by no one else; the server does not start otherwise.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from patcher.crash import CrashLimits
from patcher.delivery import DeliveryConfig, WebhookEndpoint
from patcher.errors import BadInput
from patcher.intake import private_text
from patcher.request import JobRequest

MIN_KEY_LEN = 16
RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,199}")
"""A release usable in a git ref: no slashes, spaces, `..` or leading dash (so never an option or a path)."""
SERVER_SIDE = ("repo", "ref", "traceback")


class ProjectConfig(BaseModel):
    """One application whose crashes become jobs."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: int = Field(ge=1)
    """The project number in the DSN (`http://KEY@HOST/ID`): the `{project}` of /api/{project}/envelope/."""
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    """Shown on job pages, pull requests and webhooks; the jobs' submitter is `crash:<name>`."""
    keys: list[SecretStr] = Field(min_length=1)
    """DSN public keys that may send this project's events (the credential of /api/…)."""
    repo: str = Field(min_length=1, max_length=4096)
    """The repository (a git URL, cloned with the service's credentials, or a path under PATCHER_REPO_ROOTS)."""
    ref: str = Field("{release}", min_length=1, max_length=255)
    """The deployed commit from the event's release: `{release}` (the release as a tag or commit), or a pattern
    such as `v{version}` (`{version}`: the release after its last `@`, as in `shop@1.4.2`)."""
    default_ref: str | None = Field(None, min_length=1, max_length=255)
    """The ref for an event without a release; unset: such events are refused (400)."""
    job: dict[str, Any] = Field(default_factory=dict)
    """The job's settings by the API's names (test_command, suite_command, engine, setup, attempts, limits,
    offline_limit, offline_budget_s); the server's caps apply."""
    rate_limit: int = Field(60, ge=1)
    """Events taken per `rate_window_s`; over it: 429 with Retry-After."""
    rate_window_s: float = Field(60.0, gt=0)
    """The window of the rate limit."""
    max_active_jobs: int = Field(4, ge=1)
    """New crashes opening jobs while this many of the project's jobs are queued or running get 429."""
    limits: CrashLimits = Field(default_factory=CrashLimits)
    """How much of an event is kept (sizes, frames, variables)."""
    delivery: DeliveryConfig | None = None
    """Pull requests for verified jobs; unset: none."""

    @field_validator("keys")
    @classmethod
    def _keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        if any(len(k.get_secret_value()) < MIN_KEY_LEN or not k.get_secret_value().isprintable() for k in keys):
            raise ValueError(f"a DSN key must be at least {MIN_KEY_LEN} printable characters "
                             "(e.g. `openssl rand -hex 16`)")
        return keys

    @field_validator("job")
    @classmethod
    def _job(cls, job: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(job) & set(SERVER_SIDE))
        if taken:
            raise ValueError(f"job may not set {', '.join(taken)}: they come from the project and the event")
        JobRequest(repo="-", traceback="-", **job)  # every other setting checked as the API checks it
        return job

    @model_validator(mode="after")
    def _remote(self) -> ProjectConfig:
        if "{" in self.ref.replace("{release}", "").replace("{version}", ""):
            raise ValueError("ref may use {release} and {version} only")
        if self.delivery is not None and self.delivery.remote is None:
            if "://" not in self.repo and "@" not in self.repo:
                raise ValueError("delivery needs a remote URL to push to when the repo is a server path")
            self.delivery = self.delivery.model_copy(update={"remote": self.repo})
        return self

    def ref_for(self, release: str | None) -> str | None:
        """The git ref of the deployed commit; BadInput for a release that cannot name one."""
        if release is None:
            if self.default_ref is None:
                raise BadInput("the event names no release, and the project has no default_ref: set the SDK's "
                               "release (e.g. the deployed commit)")
            return self.default_ref
        if not RELEASE.fullmatch(release) or ".." in release:
            raise BadInput(f"release {release[:80]!r} cannot name a git ref (letters, digits and ._+@- only)")
        return self.ref.format(release=release, version=release.rpartition("@")[2])

    def request(self, traceback: str, ref: str | None) -> JobRequest:
        return JobRequest(repo=self.repo, ref=ref, traceback=traceback, **self.job)

    @property
    def submitter(self) -> str:
        return f"crash:{self.name}"


class Projects(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    projects: list[ProjectConfig] = Field(default_factory=list)
    """The applications whose crashes the server takes."""
    webhooks: list[WebhookEndpoint] = Field(default_factory=list)
    """Endpoints told of job events."""

    @model_validator(mode="after")
    def _unique(self) -> Projects:
        for what, values in (("project id", [p.id for p in self.projects]),
                             ("project name", [p.name for p in self.projects]),
                             ("DSN key", [k.get_secret_value() for p in self.projects for k in p.keys]),
                             ("webhook name", [w.name for w in self.webhooks])):
            if len(values) != len(set(values)):
                raise ValueError(f"every {what} must be different")
        names = {p.name for p in self.projects}
        unknown = sorted({n for w in self.webhooks for n in w.projects} - names)
        if unknown:
            raise ValueError(f"webhooks name projects that do not exist: {', '.join(unknown)}")
        return self

    def by_id(self, project_id: str) -> ProjectConfig | None:
        return next((p for p in self.projects if str(p.id) == project_id), None)

    def by_name(self, name: str | None) -> ProjectConfig | None:
        return next((p for p in self.projects if p.name == name), None)

    def secrets(self) -> list[str]:
        """Every credential of the file (for redaction)."""
        return [k.get_secret_value() for p in self.projects for k in p.keys] + \
            [w.secret.get_secret_value() for w in self.webhooks]


def load_projects(path: Path | None) -> Projects:
    """The projects file (TOML when it ends in .toml, else JSON); BadInput naming the problem."""
    if path is None:
        return Projects()
    try:
        text = private_text(path)
    except ValueError as e:
        raise BadInput(f"PATCHER_PROJECTS_FILE: {e}") from e
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        return Projects.model_validate(data)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()) \
            if isinstance(e, ValidationError) else str(e)
        raise BadInput(f"PATCHER_PROJECTS_FILE {path}: {problems}") from e
