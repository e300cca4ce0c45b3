"""Tie a traceback's frames to repository files by the longest matching path suffix; name from the repo's
source the functions the traceback did not print (intake/framenames.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from patcher.intake.framenames import INLINED, read_repo_text, source_function
from patcher.intake.tbmodel import Frame, ParsedTraceback
from patcher.intake.tbtext import common_length

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


def map_frames(parsed: ParsedTraceback, repo_files: Iterable[str], root: Path | None = None) -> ParsedTraceback:
    """Set repo_path, and external=False where found, on every frame (the rule: `map_path`); with the
    repository's `root`, a repo frame whose function the traceback left unknown is named from its source."""
    files = list(repo_files)
    every = [*parsed.frames, *(f for frames, _ in parsed.chain for f in frames)]
    found = {f.file: map_path(f.file, files) for f in every}
    texts: dict[str, str | None] = {}

    def named(f: Frame, path: str | None) -> str:
        if f.function or f.function_printed or path is None or root is None:
            return f.function
        if path not in texts:
            texts[path] = read_repo_text(root, path)
        text = texts[path]
        return source_function(text, f.line) if text is not None else ""

    def mapped(frames: list[Frame]) -> list[Frame]:
        return [replace(f, repo_path=(p := found.get(f.file)), external=p is None, function=named(f, p))
                for f in frames]

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
    """(repo path, function) of the innermost repository frame: where a reproduction must pass through.

    A comprehension's own frame (Python 3.11 and older) gives way to the function around it, which runs
    the comprehension on every version."""
    inside = innermost_repo_frames(parsed)
    path = inside[0].repo_path if inside else None
    if not path:
        return None
    if inside[0].function in INLINED:
        around = (f.function for f in inside[1:] if f.repo_path == path and f.function not in INLINED)
        return path, next(around, "")
    return path, inside[0].function
