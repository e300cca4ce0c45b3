"""Confinement of tool paths to the repository.

A path is relative to the repo root. Refused: absolute paths, `..`, any `.git` component (tools never
touch git's own files), and anything whose resolved target (symlinks followed, final component
included) leaves the repo. Writes are also refused through a symlink in the final component.
"""

from __future__ import annotations

import os
import stat
from io import BufferedReader
from pathlib import Path, PurePosixPath

RETRY_HINT = "give a path relative to the repository root (retrying the same path will not help)"


class ToolError(Exception):
    """A tool failure; str(e) is the one sentence the model reads."""


def _parts(rel: str) -> tuple[str, ...]:
    if not isinstance(rel, str) or not rel.strip() or "\0" in rel:
        raise ToolError(f"refused: {rel!r} is not a usable path; {RETRY_HINT}")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise ToolError(f"refused: absolute path {rel!r}; {RETRY_HINT}")
    parts = tuple(p for p in pure.parts if p != ".")
    if ".." in parts:
        raise ToolError(f"refused: {rel!r} uses '..' to leave its directory; {RETRY_HINT}")
    _no_git(rel, parts)
    return parts


def _no_git(rel: str, parts: tuple[str, ...]) -> None:
    if any(p.casefold() == ".git" for p in parts):
        raise ToolError(f"refused: {rel!r} is inside .git; git's own files are off limits to tools")


def _inside(repo: str, rel: str, real: str) -> str:
    """`real` as a path relative to the repo, or ToolError when it lies outside or inside .git."""
    if real != repo and not real.startswith(repo + os.sep):
        raise ToolError(f"refused: {rel!r} resolves outside the repository (through a symlink); "
                        "retrying the same path will not help")
    inner = os.path.relpath(real, repo)
    _no_git(rel, tuple(PurePosixPath(inner).parts))
    return inner


def resolve_read(repo: str, rel: str) -> Path:
    """The real path of `rel` (all symlinks resolved), confined to the repo. `repo` must be real."""
    parts = _parts(rel)
    real = os.path.realpath(os.path.join(repo, *parts))
    _inside(repo, rel, real)
    return Path(real)


def resolve_write(repo: str, rel: str) -> Path:
    """A path to create or replace: the real parent directory plus a final name that is no symlink."""
    parts = _parts(rel)
    if not parts:
        raise ToolError(f"refused: {rel!r} names the repository root, not a file; {RETRY_HINT}")
    target = os.path.join(repo, *parts)
    if os.path.islink(target):
        raise ToolError(f"refused: {rel!r} is a symlink; tools do not write through symlinks "
                        "(retrying will not help)")
    parent = os.path.realpath(os.path.dirname(target))
    _inside(repo, rel, parent)
    return Path(parent, parts[-1])


def plain_name(name: str) -> str:
    """A bare file name (no directory part), for the report dir."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name):
        raise ToolError(f"refused: {name!r} is not a plain file name; give just the report's file name")
    return name


def open_regular(path: Path, shown: str, missing: str) -> BufferedReader:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolError(f"no such file: {shown!r}; {missing}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{shown!r} is not a regular file; retrying will not help")
    return os.fdopen(fd, "rb")


def listing(path: Path, shown: str) -> str:
    names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in os.scandir(path)
                   if e.name != ".git")
    more = f" and {len(names) - 30} more" if len(names) > 30 else ""
    return (f"{shown!r} is a directory, not a file; it holds: {', '.join(names[:30]) or 'nothing'}{more}. "
            "Read one of its files instead")
