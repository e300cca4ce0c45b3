"""Bearer tokens: who is asking. Tokens come from the settings, each with the name of its holder."""

from __future__ import annotations

import hmac

from .settings import ServerSettings


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
