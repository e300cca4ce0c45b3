"""Tie a traceback's frames to repository files by the longest matching path suffix."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from patcher.intake.tbtext import common_length
from patcher.intake.traceback import Frame, ParsedTraceback

_INSTALLED = re.compile(r"(?<=/)(?:lib\w*/python\d\.\d+t?|python\d{2,3}/lib|site-packages|dist-packages)/", re.I)


def map_path(file: str, repo_files: Iterable[str]) -> str | None:
    """The repo file (relative POSIX path) that a traceback's path names, or None.

    The repo file sharing the longest suffix of path components wins; ties go to the shorter repo path.
    The file name must match. Under site-packages, dist-packages or lib/pythonX.Y the whole module path
    below that directory must match (stdlib `json/decoder.py` never maps to `app/decoder.py`); elsewhere
    the file name alone counts only if no other repo file has it. `<string>`, `<frozen …>` never map.
    """
    path = "/" + file.replace("\\", "/")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or file.startswith("<"):
        return None
    candidates = [c for c in (_parts(f) for f in repo_files if f.endswith(parts[-1])) if c[-1] == parts[-1]]
    scored = [(common_length(parts[::-1], c[::-1]), "/".join(c)) for c in candidates]
    installed = list(_INSTALLED.finditer(path))
    needed = len(_parts(path[installed[-1].end() :])) if installed else 1 + (len(candidates) > 1)
    best = max((k for k, _ in scored), default=0)
    if best < needed:
        return None
    return min((p for k, p in scored if k == best), key=lambda p: (len(p), p))


def map_frames(parsed: ParsedTraceback, repo_files: Iterable[str]) -> ParsedTraceback:
    """Set repo_path, and external=False where found, on every frame (the rule: `map_path`)."""
    files = list(repo_files)
    every = [*parsed.frames, *(f for frames, _ in parsed.chain for f in frames)]
    found = {f.file: map_path(f.file, files) for f in every}

    def mapped(frames: list[Frame]) -> list[Frame]:
        return [replace(f, repo_path=found.get(f.file), external=found.get(f.file) is None) for f in frames]

    chain = [(mapped(frames), exc) for frames, exc in parsed.chain]
    return replace(parsed, frames=mapped(parsed.frames), chain=chain)


def innermost_repo_frames(parsed: ParsedTraceback) -> list[Frame]:
    """Mapped repo frames, innermost first; from earlier chained tracebacks if the primary has none."""
    for frames in [parsed.frames, *(frames for frames, _ in reversed(parsed.chain))]:
        if inside := [f for f in reversed(frames) if not f.external]:
            return inside
    return []


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]


CrashSite = tuple[str, str]
"""(repo path, function) of the crash site: the innermost repository frame of the user's traceback."""


def crash_site(parsed: ParsedTraceback) -> CrashSite | None:
    """(repo path, function) of the innermost repository frame: where a reproduction must pass through."""
    inside = innermost_repo_frames(parsed)
    if not inside or not inside[0].repo_path:
        return None
    return inside[0].repo_path, inside[0].function
