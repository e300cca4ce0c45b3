"""A Sentry event's exception chain, read into what a job needs: frames with their paths, lines, source and
local variables (the SDK's text for them, never evaluated), the release, and the crash's group.

Every value is untrusted and bounded here (how many exceptions, frames, variables; how long each text);
variables are kept only for in-app frames, credentials among them redacted (scrub.py).

The group of a crash (`fingerprint`): the exception types of the chain and, for each, its repository
frames (those the SDK marks in-app: `filename` and `function`, not line numbers, which move with every edit
above them). The same crash seen again has the same fingerprint; the job it opened counts it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from patcher.crash.body import BadEvent
from patcher.crash.scrub import Scrubber

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
PYTHONS = ("CPython", "Python", "PyPy")
RUNTIME_VERSION = re.compile(r"3\.\d{1,2}(?:\.\d{1,3})?(?:[a-z]+\d{0,3})?")
NOT_VALUES = ("<module ", "<function ", "<class ", "<built-in ", "<bound method ")
"""Variables that hold code, not data (imports, functions): no evidence, only noise."""


class CrashLimits(BaseModel):
    """How much of an event is kept."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_event_bytes: int = Field(1_000_000, ge=1024, le=50_000_000)
    """Largest event once decompressed."""
    max_exceptions: int = Field(10, ge=1, le=50)
    """Exceptions of a chain kept (the newest)."""
    max_frames: int = Field(50, ge=1, le=500)
    """Frames kept per exception (the innermost)."""
    max_variables: int = Field(16, ge=0, le=100)
    """Local variables kept per in-app frame."""
    variable_frames: int = Field(5, ge=0, le=50)
    """In-app frames, innermost first, whose variables are kept."""
    max_value_chars: int = Field(200, ge=16, le=10_000)
    """Longest text of one variable's value."""
    max_message_chars: int = Field(2000, ge=16, le=100_000)
    """Longest exception message."""


@dataclass(frozen=True)
class CrashFrame:
    path: str
    """The file as the application ran it (abs_path, else filename)."""
    filename: str
    """The file relative to the application's import path (Sentry's `filename`)."""
    function: str
    lineno: int
    source: str | None
    in_app: bool
    variables: tuple[tuple[str, str], ...] = ()
    """Local variables as the SDK wrote them (repr text), credentials redacted."""


@dataclass(frozen=True)
class CrashException:
    type: str
    """Qualified as Python prints it (`module.Name`, builtins bare)."""
    message: str
    frames: tuple[CrashFrame, ...]
    cause: bool = False
    """It is the direct cause of the one after it (`raise … from it`); else that one was raised while
    handling it."""


@dataclass(frozen=True)
class Crash:
    event_id: str
    release: str | None
    environment: str | None
    chain: tuple[CrashException, ...]
    """Oldest first: the last one is the exception that escaped."""
    runtime: str | None = None
    """The Python the application ran (`CPython 3.11.7`, from the event's `contexts.runtime`), or None."""

    @property
    def title(self) -> str:
        top = self.chain[-1]
        first = top.message.split("\n", 1)[0]
        return f"{top.type}: {first}"[:200] if first else top.type[:200]

    @property
    def culprit(self) -> str:
        """Where it broke: the innermost in-app frame of the escaped exception (else its innermost)."""
        frames = self.chain[-1].frames
        frame = next((f for f in reversed(frames) if f.in_app), frames[-1] if frames else None)
        return f"{frame.filename} in {frame.function}" if frame else "?"

    @property
    def fingerprint(self) -> str:
        shape = [[exc.type, [[f.filename, f.function] for f in (_in_app(exc.frames))]] for exc in self.chain]
        return hashlib.sha256(json.dumps(shape, separators=(",", ":")).encode()).hexdigest()


def _in_app(frames: tuple[CrashFrame, ...]) -> list[CrashFrame]:
    return [f for f in frames if f.in_app] or list(frames)


def read_crash(event: dict[str, Any], event_id: str, limits: CrashLimits, scrub: Scrubber) -> Crash | None:
    """The crash an event reports; None when it carries no exception (a message, a transaction)."""
    exception = event.get("exception")
    values = exception.get("values") if isinstance(exception, dict) else exception  # or a bare list (store)
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
        raise BadEvent("exception.values must be a list of objects")
    chain = tuple(_exception(v, limits, scrub) for v in values[-limits.max_exceptions :])
    if not chain:
        return None
    chain = _with_variables(chain, limits.variable_frames)
    release = _get(event, "release", str, None)
    environment = _get(event, "environment", str, None)
    return Crash(event_id=event_id, release=scrub.text(release, 200) if release else None,
                 environment=scrub.text(environment, 64) if environment else None, chain=chain,
                 runtime=_runtime(event))


def _runtime(event: dict[str, Any]) -> str | None:
    """`NAME X.Y.Z` of the event's Python runtime context (`contexts.runtime`), when it is one and well formed."""
    contexts = event.get("contexts")
    runtime = contexts.get("runtime") if isinstance(contexts, dict) else None
    if not isinstance(runtime, dict):
        return None
    name, version = runtime.get("name"), runtime.get("version")
    if not isinstance(name, str) or name not in PYTHONS or not isinstance(version, str):
        return None
    return f"{name} {version}" if RUNTIME_VERSION.fullmatch(version) else None


def _exception(value: dict[str, Any], limits: CrashLimits, scrub: Scrubber) -> CrashException:
    name = scrub.text(_get(value, "type", str, "Exception"), 200)
    module = _get(value, "module", str, None)
    if not IDENTIFIER.fullmatch(name.replace(".", "_")):
        raise BadEvent(f"exception type {name[:60]!r} is not a Python name")
    qualified = f"{module}.{name}" if module and module not in ("builtins", "__builtin__") else name
    if not re.fullmatch(r"[A-Za-z_][\w.]{0,300}", qualified):
        raise BadEvent("exception module is not a Python module name")
    frames = _get(_get(value, "stacktrace", dict, {}), "frames", list, [])
    mechanism = _get(value, "mechanism", dict, {})
    message = scrub.text(_get(value, "value", str, ""), limits.max_message_chars)
    lines = [line for line in message.split("\n") if line.strip()][:20]
    return CrashException(type=qualified, message="\n".join(lines),
                          frames=tuple(_frame(f, limits, scrub) for f in frames[-limits.max_frames :]),
                          cause=mechanism.get("source") == "__cause__")


def _frame(value: object, limits: CrashLimits, scrub: Scrubber) -> CrashFrame:
    if not isinstance(value, dict):
        raise BadEvent("a stack frame is not an object")
    filename = _get(value, "filename", str, "") or _get(value, "module", str, "") or "<unknown>"
    path = _get(value, "abs_path", str, "") or filename
    lineno = _get(value, "lineno", int, 0)
    source = _get(value, "context_line", str, None)
    variables = _get(value, "vars", dict, {}) if _get(value, "in_app", bool, False) else {}
    kept = [(k, v) for k, v in scrub.variables(variables).items()
            if IDENTIFIER.fullmatch(k) and not k.startswith("__") and not str(v).startswith(NOT_VALUES)]
    kept = kept[: limits.max_variables]
    return CrashFrame(path=_path(scrub.text(path, 300)), filename=_path(scrub.text(filename, 300)),
                      function=scrub.text(_get(value, "function", str, "") or "<unknown>", 200),
                      lineno=max(0, min(lineno, 10_000_000)),
                      source=scrub.text(source.strip(), 400) if source and source.strip() else None,
                      in_app=_get(value, "in_app", bool, False),
                      variables=tuple((k, scrub.text(_value_text(v), limits.max_value_chars)) for k, v in kept))


def _with_variables(chain: tuple[CrashException, ...], frames: int) -> tuple[CrashException, ...]:
    """Variables kept only on the innermost `frames` in-app frames of the escaped exception and its causes."""
    left, out = frames, []
    for exc in reversed(chain):
        kept = []
        for frame in reversed(exc.frames):
            keep = frame.in_app and left > 0 and bool(frame.variables)
            left -= keep
            kept.append(frame if keep else _without_variables(frame))
        out.append(CrashException(exc.type, exc.message, tuple(reversed(kept)), exc.cause))
    return tuple(reversed(out))


def _without_variables(frame: CrashFrame) -> CrashFrame:
    return CrashFrame(frame.path, frame.filename, frame.function, frame.lineno, frame.source, frame.in_app)


def _path(text: str) -> str:
    """A path as it can stand inside `File "…"` (no quotes, no line breaks)."""
    return text.replace('"', "'").replace("\n", " ")


def _value_text(value: object, depth: int = 0) -> str:
    """The SDK's serialisation of a value as one line of text: strings are already its repr; lists and
    dicts of them are joined as Python would print them."""
    if depth > 4:
        return "…"
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v, depth + 1) for v in value[:20]) + (", …]" if len(value) > 20 else "]")
    if isinstance(value, dict):
        items = [f"{k!r}: {_value_text(v, depth + 1)}" for k, v in list(value.items())[:20]]
        return "{" + ", ".join(items) + (", …}" if len(value) > 20 else "}")
    return str(value).replace("\n", "\\n")


def _get(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = obj.get(key, default)
    if value is None or value is default:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadEvent(f"{key} must be {'a ' + kind.__name__ if kind is not dict else 'an object'}")
    return value
