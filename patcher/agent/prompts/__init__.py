"""Prompt templates as files (Jinja, StrictUndefined). `render(name, **vars)`; `template_hash()` for traces."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

_DIR = Path(__file__).parent


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(_DIR), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False,
                              autoescape=False)


def render(name: str, **variables: Any) -> str:
    return _env().get_template(f"{name}.j2").render(**variables).strip()


@cache
def template_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(_DIR.glob("*.j2")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]
