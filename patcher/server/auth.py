"""Bearer tokens: who is asking. Tokens come from the settings, each with the name of its holder."""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import urlsplit

from patcher.server.settings import ServerSettings


class AuthError(Exception):
    """401 (no or malformed credentials) or 403 (a token the server does not know)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def who_is(settings: ServerSettings, authorization: str | None) -> str:
    """The name of the token in an `Authorization: Bearer …` header; AuthError otherwise (dev mode: `dev`)."""
    if not authorization:
        if settings.dev:
            return "dev"
        raise AuthError(401, "this route needs a bearer token: send `Authorization: Bearer <token>`")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "the Authorization header must be `Bearer <token>`")
    found = None
    for name, secret in settings.tokens.items():  # every token compared, each in constant time
        if hmac.compare_digest(token.strip().encode(), secret.get_secret_value().encode()):
            found = name
    if found is None:
        raise AuthError(403, "the bearer token is not one this server knows")
    return found


COOKIE = "patcher_token"
"""The review pages' sign-in: the bearer token in an HttpOnly, SameSite=Strict cookie set by POST /login."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def page_reader(settings: ServerSettings, authorization: str | None, cookie: str | None) -> str:
    """Who reads a page: the Authorization header, else the sign-in cookie; AuthError otherwise."""
    if authorization or not cookie:
        return who_is(settings, authorization)
    return who_is(settings, f"Bearer {cookie}")


def host_of(header: str) -> str:
    """The host name of a Host header (`[::1]:8000` -> `::1`, `example.com:443` -> `example.com`)."""
    if header.startswith("["):
        return header[1:].partition("]")[0].lower()
    return header.rpartition(":")[0].lower() if header.count(":") == 1 else header.lower()


class HostGuard:
    """Refuses requests for a Host the server does not answer to (DNS rebinding) and state-changing requests
    whose Origin is another site or `null` (CSRF), in every mode including dev."""

    def __init__(self, app: Any, allowed: list[str]) -> None:
        self.app, self.any_host = app, "*" in allowed
        self.allowed = {*LOOPBACK_NAMES, *(h.lower() for h in allowed)}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        problem = None
        if not self.any_host and host_of(host) not in self.allowed:
            problem = (421, f"this server does not answer to the host {host!r} (PATCHER_ALLOWED_HOSTS)")
        origin = headers.get("origin")
        if problem is None and scope["method"] not in ("GET", "HEAD", "OPTIONS") and origin is not None \
                and urlsplit(origin).netloc.lower() != host.lower():
            problem = (403, "refused: the request was sent from another site (Origin does not match Host)")
        if problem is None:
            return await self.app(scope, receive, send)
        from fastapi.responses import JSONResponse

        await JSONResponse({"detail": problem[1]}, problem[0])(scope, receive, send)
