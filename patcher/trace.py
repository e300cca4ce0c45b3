"""The black box: one append-only JSONL file per run, redacted, flushed per event.

Every event carries run_id, seq, ts and type. Secrets are removed before a byte is written: values
under secret-looking keys at any depth, and the literal values of configured secrets wherever they appear.
"""

from __future__ import annotations

import json
import re
import threading
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"
SECRET_KEY = re.compile(
    r"^(.*[_-])?(api[_-]?key|token|access[_-]?token|refresh[_-]?token|password|passwd|secret|client[_-]?secret|"
    r"authorization|cookie|set[_-]cookie|private[_-]?key)$", re.I)
current_run: ContextVar[str | None] = ContextVar("patcher_run_id", default=None)


class Redactor:
    def __init__(self, secrets: list[str] | None = None) -> None:
        self.secrets = sorted({s for s in (secrets or []) if s and len(s) >= 6}, key=len, reverse=True)

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key is not None and SECRET_KEY.match(key) and value not in (None, ""):
            return REDACTED
        if isinstance(value, dict):
            return {k: self(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, s: str) -> str:
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, REDACTED)
        return s


class Trace:
    """Append-only event writer; each event is one line, written and flushed before the next step runs."""

    def __init__(self, path: Path, run_id: str, redactor: Redactor | None = None) -> None:
        self.path, self.run_id = path, run_id
        self.redact = redactor or Redactor()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a", encoding="utf-8")
        self._seq = 0
        self._lock = threading.Lock()

    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            event = {"run_id": self.run_id, "seq": self._seq, "ts": round(time.time(), 6), "type": type,
                     **self.redact(fields)}
            self._fh.write(json.dumps(event, default=str, ensure_ascii=False) + "\n")
            self._fh.flush()
        return event

    def close(self) -> None:
        self._fh.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Events of a trace file; a torn last line (a run killed mid-write) is skipped, not fatal."""
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events
