"""The black box: one append-only JSONL file per run, redacted, flushed per event.

Every event carries run_id, seq, ts and type, and is written with one `write()` on an O_APPEND file
descriptor as it happens, so a run killed with SIGKILL leaves every event up to that moment (at worst
a torn last line, which `read_events` skips).

Secrets are removed before a byte is written: values under secret-looking keys at any depth
(api_key, x-api-key, access_token, password, secret, authorization, cookie, … in any case), and the
literal values of configured secrets, and of environment variables named like secrets (OPENAI_API_KEY,
PATCHER_TOKENS and each token in it, GITHUB_PAT, PGPASSWORD, PATCHER_DATABASE_URL, …), wherever they
appear inside strings, also in their JSON- or repr-escaped, base64 and hex forms; and the userinfo of
every URL (`https://user:token@host` becomes `https://[REDACTED]@host`).

While a Trace is open, its run id is in the context variable `current_run` (read it with
`current_run_id()`). Threads do not inherit context variables: code that runs work in a pool copies
the context, e.g. `pool.submit(contextvars.copy_context().run, fn, *args)`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
_SECRET_WORDS = {"apikey", "token", "password", "passwd", "passphrase", "secret", "secrets", "authorization",
                 "auth", "cookie", "cookies", "credential", "credentials", "bearer", "sessionid"}
_SECRET_PAIRS = {("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("set", "cookie"),
                 ("session", "id"), ("auth", "key")}
_ANYWHERE = {"password", "passwd", "secret"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
MIN_SECRET_LEN = 6
"""Shorter configured values are not treated as secrets (replacing them everywhere would shred the trace)."""
MIN_TAIL = 6
"""A string ending with this many leading characters of a secret (a cut excerpt) has that tail redacted."""

_ENV_SUFFIXES = ("_TOKENS", "_PAT", "_KEY", "_KEYS", "_DSN", "_DATABASE_URL", "_WEBHOOK_URL", "_AUTH_CONFIG",
                 "_CREDENTIALS", "_PASSWORDS")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")
_SPLIT = re.compile(r"[\s,;:\"{}]+")

current_run: ContextVar[str | None] = ContextVar("patcher_run_id", default=None)


def current_run_id() -> str | None:
    """The id of the run whose Trace is open in this context (None outside a run)."""
    return current_run.get()


def call_key(tool: str, args: Any) -> str:
    """Tool name + arguments as JSON with sorted keys at every level (dict order never hides a repeat)."""
    return tool + ":" + json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


def is_secret_key(key: str) -> bool:
    """True for keys like api_key, X-Api-Key, access_token, Authorization, AWS_SECRET_ACCESS_KEY, set-cookie;
    False for counts such as tokens or max_tokens."""
    words = [w.lower() for w in _WORD.findall(key)]
    if not words:
        return False
    return (words[-1] in _SECRET_WORDS or tuple(words[-2:]) in _SECRET_PAIRS
            or any(w in _ANYWHERE for w in words))


def is_secret_env(name: str) -> bool:
    """is_secret_key, plus names that hold several secrets or a URL with credentials in it."""
    upper = name.upper()
    return is_secret_key(name) or "PASSWORD" in upper or upper.endswith(_ENV_SUFFIXES) or upper == "DATABASE_URL"


def secrets_in_environment(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look like secrets (OPENAI_API_KEY, GITHUB_TOKEN, …), and
    the parts of each (the tokens in `alice:tok,bob:tok`, the password in a database URL)."""
    env = os.environ if env is None else env
    found = []
    for name, value in env.items():
        if is_secret_env(name) and len(value.strip()) >= MIN_SECRET_LEN:
            several = name.upper().endswith(("TOKENS", "KEYS", "SECRETS", "PASSWORDS"))
            found += [value, *(part for part in _SPLIT.split(value) if several and len(part) >= MIN_SECRET_LEN)]
    return found


def scrub_userinfo(text: str) -> str:
    """Every `scheme://user:password@` in the text with its userinfo redacted."""
    return _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)


def _encoded(secret: str) -> set[str]:
    """Base64 (standard and URL-safe) and hex of the secret, as they appear inside longer encoded text: base64
    at each of the three byte alignments, without the edge characters that depend on neighbouring bytes."""
    raw = secret.encode("utf-8")
    found = {raw.hex(), raw.hex().upper()}
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        start, end = (4 if pad else 0), len(enc) - (0 if (pad + len(raw)) % 3 == 0 else 4)
        core = enc[start:end] if end - start >= 8 else ""
        found |= {core, core.replace("+", "-").replace("/", "_")}
    return {f for f in found if len(f) >= 8}


def _forms(secret: str) -> set[str]:
    """The secret as written, and as it reads inside JSON text (once or twice escaped) or a Python repr."""
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8"))[2:-1]}
    for _ in range(2):
        forms |= {json.dumps(f)[1:-1] for f in forms} | {json.dumps(f, ensure_ascii=False)[1:-1] for f in forms}
    return {f for f in forms if len(f) >= MIN_SECRET_LEN} | _encoded(secret)


class Redactor:
    """Removes secrets from any JSON-like value. `env=None` reads secrets from os.environ; pass {} for none."""

    def __init__(self, secrets: Iterable[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        values = {s for s in (*(secrets or []), *secrets_in_environment(env)) if s and len(s) >= MIN_SECRET_LEN}
        self.forms = sorted({f for s in values for f in _forms(s)}, key=len, reverse=True)

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key is not None and is_secret_key(key) and value not in (None, "", [], {}):
            return REDACTED
        if isinstance(value, dict):
            return {k: self(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, s: str) -> str:
        s = scrub_userinfo(s)
        for form in self.forms:
            if form in s:
                s = s.replace(form, REDACTED)
        for form in self.forms:  # an excerpt cut inside a secret still must not show its start
            for n in range(len(form) - 1, MIN_TAIL - 1, -1):
                if s.endswith(form[:n]):
                    return s[:-n] + REDACTED
        return s


class Trace:
    """Append-only event writer; each event is one line, written with one write() before the next step runs."""

    def __init__(self, path: Path, run_id: str, redactor: Redactor | None = None,
                 sink: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.path, self.run_id = path, run_id
        self.redact = redactor or Redactor()
        self.sink = sink
        """Also gets each event (redacted, in seq order) after it is on disk: the server's shared event log."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._seq = 0
        self._lock = threading.Lock()
        self._token = current_run.set(run_id)

    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            if self._fd is None:
                raise ValueError(f"trace {self.path} is closed")
            self._seq += 1
            event = {"run_id": self.run_id, "seq": self._seq, "ts": round(time.time(), 6), "type": type,
                     **self.redact(fields)}
            data = (json.dumps(event, default=lambda o: self.redact.text(str(o)), ensure_ascii=False)
                    + "\n").encode("utf-8")
            written = os.write(self._fd, data)
            while written < len(data):  # a regular file takes it all at once; a short write is finished off
                written += os.write(self._fd, data[written:])
            if self.sink is not None:
                try:
                    self.sink(json.loads(data))
                except Exception:  # the file is the black box; a sink that fails must not end the job
                    log.exception("trace %s: the event sink failed at seq %d", self.run_id, self._seq)
        return event

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._fd is None:
                return
            os.close(self._fd)
            self._fd = None
        with contextlib.suppress(ValueError):  # closed from another context, which keeps its own value
            current_run.reset(self._token)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Events of a trace file; a torn last line (a run killed mid-write) is skipped, not fatal."""
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
