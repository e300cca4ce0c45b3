"""What a job request may name and ask for, checked against the server's settings before it is queued
(and the repository again when the job starts, since a path or a DNS name can change meanwhile).

- A repo URL is https, http, ssh, git or scp-like `user@host:path`, with no credentials in it (a token in
  the URL would be stored, listed and traced), naming a host that resolves only to public addresses:
  loopback, link-local (cloud metadata), private, shared and reserved ranges are refused unless
  PATCHER_ALLOW_PRIVATE_HOSTS is set.
- A server-side path is a directory whose repository (its top level, its git dir and any alternates)
  lies under an allowed root: a plain directory inside a root must not pull in an enclosing repository.
- Limits are capped by the server's settings; an unset cost limit takes the server's cap.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

from patcher.agent import Limits
from patcher.errors import BadInput
from patcher.intake import find_toplevel, git_dirs
from patcher.request import JobRequest
from patcher.server.settings import ServerSettings

SCHEMES = ("https", "http", "ssh", "git")
_TRANSPORT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
"""git's `<transport>::<address>` form (ext::, fd::, …), which can run commands."""
_SCP = re.compile(r"([A-Za-z0-9._-]+)@([A-Za-z0-9.-]+):([^\s]+)")


def check_repo(settings: ServerSettings, repo: str) -> list[str]:
    """BadInput unless `repo` is a URL or server-side path this server may use; for an http(s) URL, the
    `host:port:address` pins its clone must use (the addresses checked here)."""
    if "\x00" in repo or _TRANSPORT.match(repo) or any(c.isspace() for c in repo):
        raise BadInput(f"repo URL {repo!r}: only https, http, ssh and git URLs (or user@host:path) are allowed")
    scp = _SCP.fullmatch(repo)
    if scp or "://" in repo:
        host = scp.group(2) if scp else _url_host(repo)
        addresses = [] if settings.allow_private_hosts else check_destination(host)
        parts = urlsplit(repo)
        if scp or parts.scheme not in ("http", "https") or not addresses:
            return []
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return [f"{host}:{port}:{','.join(f'[{a}]' if ':' in a else a for a in addresses)}"]
    _check_path(settings, repo)
    return []


def _url_host(repo: str) -> str:
    parts = urlsplit(repo)
    if parts.scheme not in SCHEMES:
        raise BadInput(f"repo URL {repo!r}: only https, http, ssh and git URLs (or user@host:path) are allowed")
    try:
        host, _ = parts.hostname, parts.port
    except ValueError as e:
        raise BadInput(f"repo URL {repo!r} has no valid host and port") from e
    if parts.password is not None or (parts.username is not None and parts.scheme != "ssh"):
        raise BadInput("repo URLs must not carry credentials (user:token@…): the URL is stored and shown with the "
                       "job; give the server its own access to the repository instead")
    if not host:
        raise BadInput(f"repo URL {repo!r} names no host")
    return host


def check_destination(host: str) -> list[str]:
    """The addresses `host` resolves to; BadInput unless every one is public."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise BadInput(f"repo host {host!r} does not resolve") from e
    addresses = sorted({str(info[4][0]) for info in infos})
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if not ip.is_global or ip.is_multicast:
            raise BadInput(f"repo host {host!r} resolves to {address}, a loopback, link-local, private or reserved "
                           "address; this server does not clone from those (PATCHER_ALLOW_PRIVATE_HOSTS)")
    return addresses


def _check_path(settings: ServerSettings, repo: str) -> None:
    roots = settings.repo_roots
    if not roots:
        raise BadInput("this server takes git URLs only: no server-side repo roots are configured "
                       "(PATCHER_REPO_ROOTS)")
    path = Path(repo)
    if not path.is_absolute():
        raise BadInput(f"repo path {repo!r} must be absolute (or a git URL)")

    def inside(p: Path) -> bool:
        real = p.resolve()
        return any(real == root or real.is_relative_to(root) for root in roots)

    if not inside(path):
        raise BadInput(f"repo path {repo} is outside the allowed roots ({', '.join(map(str, roots))})")
    if not path.is_dir():
        raise BadInput(f"repo path {repo} is not a directory on the server")
    top = find_toplevel(path)
    if not inside(top):
        raise BadInput(f"repo path {repo} is not a repository itself: it lies in {top}, which is outside the "
                       "allowed roots")
    gitdir, common = git_dirs(top)
    alternates = common / "objects" / "info" / "alternates"
    borrowed = alternates.read_text(errors="replace").split() if alternates.is_file() else []
    for p in (gitdir, common, *(common / "objects" / b for b in borrowed)):
        if not inside(p):
            raise BadInput(f"repository {top} keeps its git data in {p.resolve()}, outside the allowed roots")


def cap_limits(settings: ServerSettings, limits: Limits) -> Limits:
    """The limits with the server's caps applied; BadInput naming every one asked above its cap."""
    over = [f"{name} {asked} > {cap}" for name, asked, cap in (
        ("max_rounds", limits.max_rounds, settings.max_rounds),
        ("timeout_s", limits.timeout_s, settings.max_timeout_s),
        ("context_tokens", limits.context_tokens, settings.max_context_tokens),
        ("max_cost_usd", limits.max_cost_usd or 0, settings.max_cost_usd or float("inf"))) if asked > cap]
    if over:
        raise BadInput("limits above this server's caps: " + ", ".join(over))
    if limits.max_cost_usd is None and settings.max_cost_usd is not None:
        return limits.model_copy(update={"max_cost_usd": settings.max_cost_usd})
    return limits


def cap_request(settings: ServerSettings, request: JobRequest) -> JobRequest:
    """The request with the server's caps applied: the agent's limits, and the offline engine's time, which
    may not exceed the longest the server lets an agent run (unset, it takes that cap when the default is
    over it); BadInput naming what is over."""
    budget = request.offline_budget_s
    if budget > settings.max_timeout_s:
        if "offline_budget_s" in request.model_fields_set:
            raise BadInput(f"offline_budget_s {budget} > {settings.max_timeout_s}: above this server's cap "
                           "(PATCHER_MAX_TIMEOUT_S)")
        budget = settings.max_timeout_s
    return request.model_copy(update={"limits": cap_limits(settings, request.limits), "offline_budget_s": budget})
