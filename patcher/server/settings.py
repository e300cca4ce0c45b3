"""Settings of `patcher serve`, read from the environment once at start-up and refused there when unsafe.

    PATCHER_TOKENS='alice:…,ci-bot:…'     bearer tokens by name (or a JSON object {"alice": "…"})
    PATCHER_SIGNING_KEY=/etc/patcher/ed25519.pem
    PATCHER_REPO_ROOTS=/srv/repos:/data/git      server-side paths a job may name (git URLs are always allowed)
    PATCHER_REVIEWERS=alice,bob   PATCHER_SUBMITTERS=ci-bot     who may review / submit (unset: every token)
    PATCHER_ALLOWED_HOSTS=patcher.example.com    Host names the server answers to (besides loopback names)

Outside dev mode (PATCHER_DEV=1) the server does not start without tokens and a signing key; a token
that looks like a placeholder ("changeme", "xxx", "<token>", …) or is shorter than 16 characters is
refused. The model settings (PATCHER_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY) are checked here too and
handed to each job when it runs, never stored with it: the key stays in the server's environment.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import AliasChoices, Field, PrivateAttr, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from patcher.config import SANDBOX_IMAGE
from patcher.errors import BadInput
from patcher.intake import GitAccess
from patcher.model import ModelConfig
from patcher.server.projects import Projects, load_projects

MIN_TOKEN_LEN = 16
_PLACEHOLDER = re.compile(r".*(changeme|change[-_ ]?me|replace[-_ ]?me|placeholder|example|your[-_ ]?token|"
                          r"secret|password|x{3,}|\.\.\.|<.*>|todo).*|(.)\2*", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


def _home() -> Path:
    return Path(os.environ.get("PATCHER_HOME") or Path.home() / ".patcher")


class ServerSettings(BaseSettings):
    """Everything `patcher serve` needs to know; one object, validated once."""

    model_config = SettingsConfigDict(env_prefix="PATCHER_", extra="forbid", use_attribute_docstrings=True,
                                      populate_by_name=True)

    _projects: Projects | None = PrivateAttr(None)
    home: Path = Field(default_factory=_home)
    """Where the database (by default), job traces and attestations live (env PATCHER_HOME)."""
    database_url: str | None = None
    """SQLAlchemy URL of the job store; unset means the SQLite file HOME/patcher.db (env PATCHER_DATABASE_URL)."""
    tokens: Annotated[dict[str, SecretStr], NoDecode] = Field(default_factory=dict)
    """Bearer tokens by reviewer name, `name:token,name:token` or a JSON object (env PATCHER_TOKENS)."""
    dev: bool = False
    """Dev mode: tokens and signing key may be unset (requests without a token act as `dev`) (env PATCHER_DEV)."""
    signing_key: Path | None = None
    """PEM Ed25519 private key that signs verification records (env PATCHER_SIGNING_KEY); dev mode without
    one makes HOME/signing-key.pem."""
    repo_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    """Directories under which a job may name a server-side repository, separated by `:` (env PATCHER_REPO_ROOTS)."""
    reviewers: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Token names that may review (approve or reject), comma-separated; unset means every token
    (env PATCHER_REVIEWERS)."""
    submitters: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Token names that may submit and cancel jobs, comma-separated; unset means every token
    (env PATCHER_SUBMITTERS)."""
    allow_self_approval: bool = False
    """Whether the submitter of a job may approve it (env PATCHER_ALLOW_SELF_APPROVAL)."""
    allow_private_hosts: bool = False
    """Whether a repo URL may name a loopback, link-local, private or reserved address (env
    PATCHER_ALLOW_PRIVATE_HOSTS)."""
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Host header names the server answers to besides localhost, 127.0.0.1, ::1 and the address it listens on,
    comma-separated; `*` turns the check off (env PATCHER_ALLOWED_HOSTS)."""
    max_rounds: int = Field(100, ge=1)
    """Most model calls a job may ask for (env PATCHER_MAX_ROUNDS)."""
    max_timeout_s: float = Field(3600.0, gt=0)
    """Longest agent wall clock a job may ask for (env PATCHER_MAX_TIMEOUT_S)."""
    max_context_tokens: int = Field(200_000, ge=2_000)
    """Largest prompt size a job may ask for (env PATCHER_MAX_CONTEXT_TOKENS)."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Most spend a job may ask for; when set, a job must name a cost limit (env PATCHER_MAX_COST_USD)."""
    max_active_per_token: int = Field(4, ge=1)
    """Jobs one token may have queued or running at once (env PATCHER_MAX_ACTIVE_PER_TOKEN)."""
    clone_timeout_s: float = Field(300.0, gt=0)
    """Seconds a clone of a repo URL may take (env PATCHER_CLONE_TIMEOUT_S)."""
    clone_max_bytes: int = Field(1024 * 2**20, ge=2**20)
    """Bytes a clone of a repo URL may write (env PATCHER_CLONE_MAX_BYTES)."""
    git_tokens_file: Path | None = None
    """The server's tokens for private git remotes, `https://host[:port] [user:]token` a line, owned by the
    server's user and readable by no one else (env PATCHER_GIT_TOKENS_FILE)."""
    git_ssh_key: Path | None = None
    """The server's ssh key for ssh remotes, mode-checked like the tokens (env PATCHER_GIT_SSH_KEY)."""
    git_known_hosts: Path | None = None
    """The host keys ssh remotes must present; required with the ssh key (env PATCHER_GIT_KNOWN_HOSTS)."""
    max_body_bytes: int = Field(1_000_000, ge=1024)
    """Largest request body accepted (env PATCHER_MAX_BODY_BYTES)."""
    max_traceback_bytes: int = Field(256_000, ge=256)
    """Largest traceback accepted, UTF-8 bytes (env PATCHER_MAX_TRACEBACK_BYTES)."""
    workers: int = Field(2, ge=0, le=64)
    """Jobs run at the same time in this process (env PATCHER_WORKERS); 0: an API node only, jobs run in
    `patcher worker` processes sharing PATCHER_DATABASE_URL."""
    exclusive: bool = True
    """This server is the only one using the database, so jobs it left running are recovered at start at once;
    set False when several servers share one database (env PATCHER_EXCLUSIVE)."""
    lease_s: float = Field(30.0, gt=0)
    """A running job whose worker sent no heartbeat for this long is recovered (env PATCHER_LEASE_S)."""
    sandbox_image: str = SANDBOX_IMAGE
    """Image the jobs' containers start from (env PATCHER_SANDBOX_IMAGE)."""
    model: str | None = Field(None, validation_alias=AliasChoices("PATCHER_MODEL"))
    """Model name (env PATCHER_MODEL), passed to each job when it runs."""
    openai_base_url: str | None = Field(None, validation_alias=AliasChoices("OPENAI_BASE_URL"))
    """OpenAI-compatible endpoint (env OPENAI_BASE_URL)."""
    openai_api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    """Model key (env OPENAI_API_KEY); it stays in the server and is redacted from traces."""
    projects_file: Path | None = None
    """The operator's projects (crash intake, delivery as pull requests) and webhook endpoints, TOML or JSON,
    owned by the server's user and readable by no one else (env PATCHER_PROJECTS_FILE; server/projects.py)."""
    public_url: str | None = Field(None, pattern=r"^https?://[^\s/]+(/[^\s]*)?$")
    """The server's address as people reach it, for the review and record links of pull requests and
    webhooks (env PATCHER_PUBLIC_URL); default: http://127.0.0.1:8000."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _parse_tokens(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text.startswith("{"):
            return json.loads(text)
        pairs = [p.strip() for p in text.split(",") if p.strip()]
        if any(":" not in p for p in pairs):
            raise ValueError("write tokens as name:token pairs separated by commas, or as a JSON object")
        return dict(p.split(":", 1) for p in pairs)

    @field_validator("reviewers", "submitters", "allowed_hosts", mode="before")
    @classmethod
    def _parse_names(cls, value: Any) -> Any:
        return [p.strip() for p in value.split(",") if p.strip()] if isinstance(value, str) else value

    @field_validator("repo_roots", mode="before")
    @classmethod
    def _parse_roots(cls, value: Any) -> Any:
        return [p for p in value.split(os.pathsep) if p.strip()] if isinstance(value, str) else value

    @field_validator("tokens")
    @classmethod
    def _check_tokens(cls, tokens: dict[str, SecretStr]) -> dict[str, SecretStr]:
        seen: set[str] = set()
        for name, token in tokens.items():
            value = token.get_secret_value()
            if not _NAME.fullmatch(name):
                raise ValueError(f"token name {name!r} must be 1-64 letters, digits or ._@-")
            if len(value) < MIN_TOKEN_LEN or _PLACEHOLDER.fullmatch(value):
                raise ValueError(f"the token of {name!r} looks like a placeholder or is shorter than "
                                 f"{MIN_TOKEN_LEN} characters; set a random one (e.g. `openssl rand -hex 24`)")
            if value in seen:
                raise ValueError(f"the token of {name!r} is also another name's token")
            seen.add(value)
        return tokens

    @field_validator("repo_roots")
    @classmethod
    def _check_roots(cls, roots: list[Path]) -> list[Path]:
        for root in roots:
            if not root.is_absolute() or not root.is_dir():
                raise ValueError(f"repo root {root} must be an absolute path of an existing directory")
        return [root.resolve() for root in roots]

    @model_validator(mode="after")
    def _check_production(self) -> Self:
        if not self.dev and not self.tokens:
            raise ValueError("PATCHER_TOKENS is not set; set name:token pairs (or PATCHER_DEV=1 for local use)")
        if self.signing_key is None and not self.dev:
            raise ValueError("PATCHER_SIGNING_KEY is not set; it names the Ed25519 key that signs records")
        if self.signing_key is not None:
            from patcher.review import load_private_key

            with suppress(OSError):  # an unreadable key is reported by load_private_key below
                st = self.signing_key.stat()
                if st.st_mode & 0o077 or st.st_uid != os.getuid():
                    raise ValueError(f"the signing key {self.signing_key} must be owned by this user and readable "
                                     f"by no one else (chmod 600; mode now {st.st_mode & 0o777:o})")
            try:
                load_private_key(self.signing_key)
            except BadInput as e:
                raise ValueError(str(e)) from e
        unknown = sorted(set(self.reviewers + self.submitters) - set(self.tokens)) if self.tokens else []
        if unknown:
            raise ValueError(f"PATCHER_REVIEWERS/PATCHER_SUBMITTERS name {', '.join(unknown)}, who have no token")
        self.model_settings()
        self._check_git_access()
        self._check_projects()
        return self

    def _check_projects(self) -> None:
        try:
            self.projects()
        except BadInput as e:
            raise ValueError(str(e)) from e

    def projects(self) -> Projects:
        """The projects file, read and checked once (BadInput when unusable)."""
        if self._projects is None:
            self._projects = load_projects(self.projects_file)
        return self._projects

    def link(self, path: str) -> str:
        """An absolute link to a page or route of this server."""
        return (self.public_url or "http://127.0.0.1:8000").rstrip("/") + path

    def _check_git_access(self) -> None:
        try:
            self.git_access().check()
        except BadInput as e:
            raise ValueError(str(e)) from e

    def git_access(self) -> GitAccess:
        """The server's own credentials for the repo URLs jobs name (paths; the secrets stay in the files)."""
        return GitAccess(tokens_file=self.git_tokens_file, ssh_key=self.git_ssh_key, known_hosts=self.git_known_hosts)

    def may(self, who: str, action: str) -> bool:
        """Whether the token named `who` may `submit` (and cancel) or `review`; reading needs any token."""
        names = self.reviewers if action == "review" else self.submitters
        return (who == "dev" and self.dev) or not names or who in names

    def model_settings(self) -> ModelConfig | None:
        """The model settings every job runs with; None when none are set (BadInput when unusable)."""
        if not (self.model or self.openai_base_url or self.openai_api_key):
            return None
        overrides = {"model": self.model, "base_url": self.openai_base_url,
                     "api_key": self.openai_api_key.get_secret_value() if self.openai_api_key else None}
        return ModelConfig.from_env({}, **overrides)

    def key_path(self) -> Path:
        """The signing key; in dev mode without one, HOME/signing-key.pem (made on first use)."""
        if self.signing_key is not None:
            return self.signing_key
        from patcher.review import generate_keypair

        path = self.home / "signing-key.pem"
        if not path.exists():
            self.home.mkdir(parents=True, exist_ok=True)
            generate_keypair(path, self.home / "signing-key.pub.pem")
        return path

    def store_url(self) -> str:
        if self.database_url:
            return self.database_url
        self.home.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{self.home / 'patcher.db'}"


class WorkerSettings(ServerSettings):
    """`patcher worker`: the same PATCHER_* settings; it serves no HTTP and signs nothing, so it needs
    neither tokens nor the signing key (which then stay off the hosts that run repositories' code)."""

    @model_validator(mode="after")
    def _check_production(self) -> Self:  # replaces the server's check: a worker needs no tokens or key
        if self.workers < 1:
            raise ValueError("a worker needs PATCHER_WORKERS of at least 1")
        self.model_settings()
        self._check_git_access()  # the worker is the one that clones
        self._check_projects()
        return self


def load_settings(worker: bool = False, **overrides: Any) -> ServerSettings:
    """Settings from the environment (overrides win); BadInput with one line per problem when unusable."""
    try:
        return (WorkerSettings if worker else ServerSettings)(**overrides)
    except ValidationError as e:
        problems = "; ".join(f"{_where(err['loc'])}{err['msg'].removeprefix('Value error, ')}" for err in e.errors())
        raise BadInput(f"server settings: {problems}") from e


def _where(loc: tuple[Any, ...]) -> str:
    if not loc:
        return ""
    name = str(loc[0]).upper()
    return f"{name if name.startswith(('PATCHER_', 'OPENAI_')) else 'PATCHER_' + name}: "
