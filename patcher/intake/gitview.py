"""A git directory of patcher's own over a user's repository, so no program the repository names runs here.

Everything that makes git run a program (filter drivers, textconv, diff and merge drivers, fsmonitor,
hooks, credential helpers, ssh and pager commands, packObjectsHook, …) is named in a config file or a hook
directory; `.gitattributes` only refers to drivers by name. So git never runs with the user's `.git` as
its git directory: a private one is made instead, with a config written here, no hooks, the user's
objects reached through `objects/info/alternates`, and copies of the user's HEAD, refs, index and
`info/exclude`. Git then reads the committed content and the work tree with nothing to call out to.
The user's config file is only ever parsed (`git config --file`, which follows no includes).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from patcher.errors import BadInput
from patcher.intake.hostgit import GitFailed, host_git

HEAD_LINE = re.compile(r"ref: refs/[^\s\x00]+|[0-9a-f]{40}|[0-9a-f]{64}")


def find_toplevel(path: Path) -> Path:
    """The work tree that holds `path`: the nearest directory upwards with a `.git` (directory or gitfile)."""
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory")
    real = path.resolve()
    for candidate in (real, *real.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    raise BadInput(f"{path} is not a git repository (run `git init` there, or pass a git URL)")


def git_dirs(top: Path) -> tuple[Path, Path]:
    """(git dir, common dir) of the work tree `top`, following a gitfile (linked worktree, submodule)."""
    dot = top / ".git"
    if dot.is_symlink():
        raise BadInput(f"{dot} is a symlink; patcher reads only a real .git directory or gitfile")
    if dot.is_file():
        text = dot.read_text(errors="replace").strip()
        if not text.startswith("gitdir: "):
            raise BadInput(f"{dot} is neither a git directory nor a gitfile")
        gitdir = (top / text.removeprefix("gitdir: ").strip()).resolve()
    else:
        gitdir = dot.resolve()
    common = gitdir
    if (gitdir / "commondir").is_file():
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    if not (common / "objects").is_dir() or not (gitdir / "HEAD").is_file():
        raise BadInput(f"{top} is not a git repository (no objects or HEAD in {gitdir})")
    return gitdir, common


def make_view(top: Path, view: Path, index: bool = True) -> Path:
    """Writes a private git dir at `view` over the repository whose work tree is `top`; returns `view`.
    Without `index` the view starts with no index (for checking out a commit into a fresh work tree)."""
    gitdir, common = git_dirs(top)
    head = (gitdir / "HEAD").read_text(errors="replace").strip()
    if not HEAD_LINE.fullmatch(head):
        raise BadInput(f"{gitdir / 'HEAD'} is not a HEAD git understands")
    (view / "objects" / "info").mkdir(parents=True)
    (view / "info").mkdir()
    (view / "objects" / "info" / "alternates").write_text(f"{common / 'objects'}\n")
    (view / "HEAD").write_text(head + "\n")
    _copy_files(common / "refs", view / "refs")
    for name in ("packed-refs",):
        _copy_file(common / name, view / name)
    _copy_file(common / "info" / "exclude", view / "info" / "exclude")
    if index:
        _copy_file(gitdir / "index", view / "index")
        for shared in gitdir.glob("sharedindex.*"):  # a split index needs its shared part beside it
            _copy_file(shared, view / shared.name)
    (view / "config").write_text(_config(common / "config", view))
    return view


def _config(user_config: Path, view: Path) -> str:
    """Our config: only the object format is taken from the user's (parsed, never executed)."""
    fmt = _read_config(user_config, view, "extensions.objectformat") or "sha1"
    if fmt not in ("sha1", "sha256"):
        raise BadInput(f"the repository's object format {fmt!r} is not one git knows")
    if _read_config(user_config, view, "extensions.refstorage"):
        raise BadInput("the repository keeps its refs in a reftable, which patcher cannot read yet")
    if fmt == "sha1":
        return "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    return "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"


def _read_config(path: Path, view: Path, key: str) -> str | None:
    if not path.is_file() or path.is_symlink():
        return None
    try:
        out = host_git(view, "config", "--file", str(path), "--get", key, env={"GIT_DIR": str(view)}, timeout=30)
    except GitFailed:
        return None  # unset (exit 1), or a file git cannot parse: the defaults
    return out.strip().lower() or None


def _copy_file(src: Path, dest: Path) -> None:
    """Copies a regular file (never through a symlink: a planted link could pull in any host file)."""
    try:
        st = src.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest, follow_symlinks=False)


def _copy_files(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if not src.is_dir() or src.is_symlink():
        return
    for dirpath, _, filenames in os.walk(src):  # os.walk does not descend into symlinked dirs
        rel = Path(dirpath).relative_to(src)
        for name in filenames:
            _copy_file(Path(dirpath) / name, dest / rel / name)
