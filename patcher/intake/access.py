"""The service's own access to private git remotes, used only for the clone of a URL a job names.

Two sources, both files the service owns (mode-checked like the signing key):

- PATCHER_GIT_TOKENS_FILE: a token per origin (credhelper.py has the format). git gets it from patcher's
  own credential helper, named on the command line after the reset `credential.helper=`, so neither the
  repository's config nor the caller's GIT_* environment can name another helper; it answers only for
  the origin a line names (a redirect to another host gets nothing) and only over a pipe. Chosen over an
  `http.<url>.extraHeader`, which would put the token in git's argv or environment and send it before
  any challenge.
- PATCHER_GIT_SSH_KEY with PATCHER_GIT_KNOWN_HOSTS: ssh runs with that key only (`IdentitiesOnly`, no
  agent, no ssh config) and with host key checking against the pinned known_hosts only, so the key is
  offered to no host the file does not pin.

A job's URL never carries credentials; `redact` takes them out of anything git said back.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict

from patcher.errors import BadInput
from patcher.intake import credhelper
from patcher.intake.hostgit import Session

REDACTED = "[REDACTED]"
AUTH_FAILED = ("authentication failed", "could not read username", "could not read password",
               "returned error: 401", "returned error: 403", "permission denied (publickey",
               "host key verification failed", "no such identity", "host key for")


class GitAccess(BaseModel):
    """Where the service's credentials for git remotes come from (paths only: the secrets stay in the files)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    tokens_file: Path | None = None
    """A token per origin, `https://host[:port] [user:]token` a line (env PATCHER_GIT_TOKENS_FILE)."""
    ssh_key: Path | None = None
    """Private key for ssh remotes (env PATCHER_GIT_SSH_KEY); needs known_hosts."""
    known_hosts: Path | None = None
    """The only host keys ssh accepts (env PATCHER_GIT_KNOWN_HOSTS)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GitAccess:
        env = os.environ if env is None else env
        paths = {field: env.get(f"PATCHER_GIT_{field.upper()}", "").strip() for field in cls.model_fields}
        return cls(**{field: Path(value) for field, value in paths.items() if value})

    def check(self) -> None:
        """BadInput naming the setting when a configured source is unusable."""
        self.tokens()
        if bool(self.ssh_key) != bool(self.known_hosts):
            raise BadInput("PATCHER_GIT_SSH_KEY and PATCHER_GIT_KNOWN_HOSTS go together: set both or neither")
        if self.ssh_key is not None:
            try:
                credhelper.private_text(self.ssh_key)
            except credhelper.BadTokens as e:
                raise BadInput(f"PATCHER_GIT_SSH_KEY: {e}") from e
            if not self.known_hosts or not self.known_hosts.is_file():
                raise BadInput(f"PATCHER_GIT_KNOWN_HOSTS: {self.known_hosts} is not a file")

    def tokens(self) -> dict[str, tuple[str, str]]:
        if self.tokens_file is None:
            return {}
        try:
            return credhelper.read_tokens(self.tokens_file)
        except credhelper.BadTokens as e:
            raise BadInput(f"PATCHER_GIT_TOKENS_FILE: {e}") from e

    def secrets(self) -> list[str]:
        """The token values (for redaction); none when the file is unusable (the clone says why)."""
        try:
            return [token for _, token in self.tokens().values()]
        except BadInput:
            return []

    def session(self, url: str, pins: list[str]) -> Session:
        """What git gets for cloning `url`: patcher's helper when a token file is set, the pinned ssh setup
        for ssh remotes, and `pins` (http.curloptResolve arguments)."""
        settings, env = list(pins), {}
        if self.tokens_file is not None:
            helper = f"!{shlex.quote(sys.executable)} -I {shlex.quote(credhelper.__file__)}"
            settings += ["-c", f"credential.helper={helper}", "-c", "credential.useHttpPath=false"]
            env[credhelper.FILE_ENV] = str(self.tokens_file)
        if is_ssh(url):
            ssh = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
            if self.ssh_key is not None and self.known_hosts is not None:
                ssh += ["-i", str(self.ssh_key), "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
                        "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null"]
            env["GIT_SSH_COMMAND"] = shlex.join(ssh)
        return Session(settings=settings, env=env)

    def refused(self, url: str, said: str, doing: str = "clone") -> BadInput | None:
        """The error for a remote that refused access (None when `said` is some other failure)."""
        if not any(marker in said.lower() for marker in AUTH_FAILED):
            return None
        if is_ssh(url):
            where = "PATCHER_GIT_SSH_KEY and PATCHER_GIT_KNOWN_HOSTS" if self.ssh_key else \
                "no ssh key is configured: set PATCHER_GIT_SSH_KEY and PATCHER_GIT_KNOWN_HOSTS"
            return BadInput(f"cannot {doing} {url}: the ssh remote refused access ({said}); check {where}")
        origin = origin_of(url)
        try:
            tokens = self.tokens()
        except BadInput:
            tokens = {}
        where = f"the token for {origin} in PATCHER_GIT_TOKENS_FILE" if origin in tokens else \
            f"no token for {origin} is configured: add one to PATCHER_GIT_TOKENS_FILE"
        return BadInput(f"cannot {doing} {url}: {origin} refused access ({said}); check {where}")

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets(), key=len, reverse=True):
            for form in {secret, quote(secret, safe="")}:
                text = text.replace(form, REDACTED)
        return text

    def describe(self) -> list[str]:
        """Which sources are configured, for `patcher doctor` (origins and paths, never a secret)."""
        lines = []
        if self.tokens_file is not None:
            origins = ", ".join(sorted(self.tokens())) or "no origins"
            lines.append(f"tokens for {origins} (PATCHER_GIT_TOKENS_FILE={self.tokens_file})")
        if self.ssh_key is not None:
            lines.append(f"ssh key PATCHER_GIT_SSH_KEY={self.ssh_key}, host keys pinned by "
                         f"PATCHER_GIT_KNOWN_HOSTS={self.known_hosts}")
        return lines


def is_ssh(url: str) -> bool:
    return url.startswith("ssh://") or ("://" not in url and "@" in url.split(":", 1)[0])


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{(parts.netloc.rpartition('@')[2]).lower()}"
