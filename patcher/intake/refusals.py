"""What a git remote's refusal means, read from everything git and ssh said (git's own last line, "and the
repository exists.", says nothing), and which of the service's settings to look at.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

SSH_ANSWERS = (
    # (what ssh says, lower case; what it means; which setting: "known" for the host keys, "key" for the key)
    ("has changed and you have requested strict checking",
     "the host's key is not the one {known_hosts} pins for {host} (a host key mismatch)", "known"),
    ("host key is known for", "{known_hosts} pins no key for {host} (an unknown host)", "known"),
    ("host key verification failed", "the host's key could not be verified against {known_hosts}", "known"),
    ("permission denied (publickey", "the host refused the key {ssh_key} (authentication refused)", "key"),
    ("no such identity", "the key file {ssh_key} could not be read", "key"),
    ("could not resolve hostname", "the host name {host} does not resolve", "url"),
    ("connection refused", "nothing answers at {host} (connection refused)", "url"),
    ("connection timed out", "{host} did not answer (timed out)", "url"),
)
HTTP_ANSWERS = (
    ("returned error: 401", "answered 401 Unauthorized"), ("authentication failed", "refused the credentials"),
    ("could not read username", "asked for credentials (401) and none were configured"),
    ("could not read password", "asked for a password and none was configured"),
    ("returned error: 403", "answered 403 Forbidden"),
    ("returned error: 404", "has no such repository, or the token may not see it (404 Not Found)"),
    ("not found", "has no such repository, or the token may not see it"),
)


def ssh_refusal(url: str, said: str, ssh_key: Path | None, known_hosts: Path | None, doing: str) -> str | None:
    """The sentence for an ssh remote that refused (None when ssh said none of the known refusals)."""
    line, meaning, setting = _first(said, SSH_ANSWERS)
    if not line:
        return None
    host = ssh_host(url)
    known = f"PATCHER_GIT_KNOWN_HOSTS ({known_hosts})" if known_hosts else "the service user's own known_hosts"
    key = f"PATCHER_GIT_SSH_KEY ({ssh_key})" if ssh_key else "ssh's default key"
    what = meaning.format(known_hosts=known, ssh_key=key, host=host)
    if setting == "known":
        check = (f"check that PATCHER_GIT_KNOWN_HOSTS holds the host's current key (`ssh-keyscan {_keyscan(url)}`, "
                 "compared with what its admin says)" if known_hosts else
                 "no host keys are pinned: set PATCHER_GIT_KNOWN_HOSTS (and PATCHER_GIT_SSH_KEY)")
    elif setting == "key":
        check = (f"check that the public key of PATCHER_GIT_SSH_KEY is authorized for {_user(url)} on {host}"
                 if ssh_key else "no ssh key is configured: set PATCHER_GIT_SSH_KEY and PATCHER_GIT_KNOWN_HOSTS")
    else:
        check = "check the repository URL"
    return f"cannot {doing} {url}: {what} (ssh said: {line}); {check}"


def http_answer(said: str) -> tuple[str, str] | None:
    """(the line that says it, what the remote answered) for an https remote's refusal; None otherwise."""
    line, meaning, _ = _first(said, tuple((marker, text, "") for marker, text in HTTP_ANSWERS))
    return (line, meaning) if line else None


def ssh_host(url: str) -> str:
    """`host`, or `[host]:port` as ssh and known_hosts spell a host on another port."""
    if url.startswith("ssh://"):
        parts = urlsplit(url)
        return f"[{parts.hostname}]:{parts.port}" if parts.port else str(parts.hostname)
    return url.split(":", 1)[0].rpartition("@")[2]


def _keyscan(url: str) -> str:
    parts = urlsplit(url) if url.startswith("ssh://") else None
    if parts is not None and parts.port:
        return f"-p {parts.port} {parts.hostname}"
    return ssh_host(url)


def _user(url: str) -> str:
    netloc = urlsplit(url).netloc if url.startswith("ssh://") else url.split(":", 1)[0]
    user = netloc.rpartition("@")[0]
    return user or "the user of the URL"


def _first(said: str, answers: tuple[tuple[str, str, str], ...]) -> tuple[str, str, str]:
    """The first answer (in the table's order: the most specific first) some line of `said` gives."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    for marker, meaning, setting in answers:
        for line in lines:
            if marker in line.lower():
                return line.removeprefix("fatal: ").strip("'\""), meaning, setting
    return "", "", ""
