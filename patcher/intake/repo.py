"""Repo intake: a local work tree or a git URL + ref becomes a staging copy with a base commit of its own.

The staging copy holds the user's current files (committed or not, untracked-but-not-ignored included;
symlinks kept as links, never followed; device nodes, fifos and submodules dropped) and a fresh `.git`
made here, so the user's `.git/config` and hooks never travel and never run. Host git never runs with
the user's `.git` as its git directory: a local repository is read through a private git dir over its
objects (`gitview.py`), so nothing its config or attributes name (filters, fsmonitor, hooks, …) can run.
A clone of a URL is bounded in time and size.

The box gets the repo as two tars: the work tree (files owned by the sandbox uid; the tool server unpacks
it from its stdin) and `.git` (root-owned and read-only; Docker puts it in as root, beside the first).

A symlink whose target is absolute or climbs out of the repo (resolved lexically from where it sits) stays
in the staging copy and the base commit, but never enters the container as it is: the work tree's tar
carries a dangling stand-in instead, pointing just outside the repo (at a path in /workspace, which is not
the sandbox user's, that does not exist), which the tools refuse like any link that leaves it; the staging
index marks the path skip-worktree so `git_diff` does not report the swap.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from patcher.errors import BadInput
from patcher.intake.clone import CloneLimits, clone_url
from patcher.intake.gitview import find_toplevel, make_view
from patcher.intake.hostgit import GitFailed, host_git, open_repo

MAX_REPO_BYTES = 512 * 1024 * 1024
STAND_IN = ".symlink-leaving-the-repo-withheld-by-patcher"
"""Where a withheld link points in the container, relative to the directory holding the repo."""


@dataclass
class StagedRepo:
    path: Path
    base_commit: str
    source_commit: str | None
    dirty: bool
    files: list[str]
    outside_links: list[str] = field(default_factory=list)
    """Symlinks in `files` that leave the repo: in the container they point at STAND_IN instead."""
    _tars: dict[int | None, bytes] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """One build of each tar, however many boxes open at once."""

    def tree_tar(self, uid: int) -> bytes:
        """The work tree without `.git`, names relative to the repo root: files and directories owned by uid."""
        with self._lock:
            if uid not in self._tars:
                self._tars[uid] = _tree_tar(self.path, uid)
            return self._tars[uid]

    def git_tar(self) -> bytes:
        """`.git` alone, names relative to the repo root: root-owned, read-only (0444 files, 0555 dirs)."""
        with self._lock:
            if None not in self._tars:
                self._tars[None] = _git_tar(self.path)
            return self._tars[None]

    def cleanup(self) -> None:
        shutil.rmtree(self.path.parent, ignore_errors=True)


def stage_repo(source: str, ref: str | None = None, clone: CloneLimits | None = None) -> StagedRepo:
    """Copy `source` (a path or a git URL) at `ref` (default: the work tree as it is) into staging."""
    root = Path(tempfile.mkdtemp(prefix="patcher-stage-"))
    try:
        local = _local_path(source)
        if local is None:
            return _stage_tree(clone_url(source, ref, root / "clone", clone or CloneLimits()), root / "repo")
        top = find_toplevel(local)
        if ref is not None:
            return _stage_tree(_checkout_local(top, ref, root / "clone"), root / "repo")
        return _stage_tree(top, root / "repo", make_view(top, root / "view"))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _local_path(source: str) -> Path | None:
    """The directory a source names (a path, or a file:// URL, read like a path), None for a remote URL."""
    if source.startswith("file://"):
        return Path(unquote(source.removeprefix("file://")))
    if Path(source).exists():
        return Path(source)
    if "://" in source or re.fullmatch(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+", source):
        return None
    raise BadInput(f"{source} is neither an existing path nor a git URL")


def _checkout_local(top: Path, ref: str, dest: Path) -> Path:
    """`ref` of a local repository checked out into a repository of ours that borrows its objects."""
    dest.mkdir()
    make_view(top, dest / ".git", index=False)
    try:
        host_git(dest, "checkout", "--quiet", "--detach", ref, "--",
                 env={"GIT_DIR": str(dest / ".git"), "GIT_WORK_TREE": str(dest)})
    except GitFailed as e:
        raise BadInput(f"cannot check out {ref} of {top}: {_last_line(e.stderr)}") from e
    return dest


def _last_line(text: str) -> str:
    return (text.strip().splitlines()[-1:] or [""])[0].strip()


def _stage_tree(tree: Path, dest: Path, git_dir: Path | None = None) -> StagedRepo:
    """The files of `tree` (read through `git_dir`, default its own `.git`, which is then one of ours)
    copied to `dest` and committed there as the base."""
    with open_repo(git_dir or tree / ".git", worktree=tree) as repo:
        listed = repo.git.ls_files("-z", "--cached", "--others", "--exclude-standard")
        files = _copy_listed(tree, dest, sorted({p for p in listed.split("\0") if p}))
        source_commit, dirty = _source_state(repo)
    dest.mkdir(parents=True, exist_ok=True)
    with open_repo(_init(dest)) as staging:
        staging.git.add("--all", "--force")
        # No automatic gc or maintenance: nothing may write .git in the background once it is staged.
        staging.git(c=["gc.auto=0", "maintenance.auto=false"]).commit(
            "--quiet", "--allow-empty", "--no-verify", "--no-gpg-sign", "-m", "patcher base")
        # One pack instead of a loose object per file: Docker's put_archive, which puts .git in, pays per entry.
        staging.git(c=["pack.window=0", "core.fsync=none"]).repack("-a", "-d", "-q")
        outside = [rel for rel in files if (dest / rel).is_symlink() and leaves_repo(rel, os.readlink(dest / rel))]
        for i in range(0, len(outside), 500):
            staging.git.update_index("--skip-worktree", "--", *outside[i : i + 500])
        base = staging.head.commit.hexsha
    _readable(dest / ".git")  # last: a box may mount it read-only, and the sandbox user must read all of it
    return StagedRepo(dest, base, source_commit, dirty, files, outside)


def _readable(git_dir: Path) -> None:
    for top, dirs, names in os.walk(git_dir):
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o755)
        for name in names:
            path = os.path.join(top, name)
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o444)
    os.chmod(git_dir, 0o755)


def _init(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    host_git(dest, "init", "--quiet", "--template=", "--initial-branch=base")
    return dest / ".git"


def _copy_listed(tree: Path, dest: Path, listed: list[str]) -> list[str]:
    files, total = [], 0
    for rel in listed:
        src = tree / rel
        try:
            st = src.lstat()
        except FileNotFoundError:
            continue  # tracked but deleted in the work tree: the base does not have it
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            continue  # submodules, fifos, sockets, device nodes
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), target)
        else:
            total += st.st_size
            if total > MAX_REPO_BYTES:
                raise BadInput(f"repository is larger than {MAX_REPO_BYTES // 2**20} MiB of files")
            shutil.copyfile(src, target, follow_symlinks=False)
            os.chmod(target, 0o755 if st.st_mode & 0o111 else 0o644)
        files.append(rel)
    return files


def leaves_repo(rel: str, target: str) -> bool:
    """Whether a symlink at `rel` (relative to the repo root) pointing at `target` leaves the repo,
    resolved lexically as Docker's breakout check does: absolute targets always count as leaving."""
    if posixpath.isabs(target):
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return resolved == ".." or resolved.startswith("../")


def _source_state(repo: Any) -> tuple[str | None, bool]:
    """(HEAD's commit, whether the work tree differs from it); (None, True) before the first commit.
    Asked of git, not read by GitPython's object model: the user's repository may use sha256 object ids."""
    status, head, _ = repo.git.rev_parse("--verify", "--quiet", "HEAD", with_extended_output=True,
                                         with_exceptions=False)
    if status != 0:
        return None, True
    # Submodules are not staged, so their state is not the base's; status would also enter their .git.
    dirty = bool(repo.git.status("--porcelain", "--untracked-files=normal", "--ignore-submodules=all"))
    return head, dirty


def _tree_tar(repo: Path, uid: int) -> bytes:
    def owner(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isfile() or info.isdir() or info.issym()):
            return None
        info.uid = info.gid = uid
        info.mode = (info.mode & 0o755) | 0o600 if not info.issym() else info.mode
        if info.issym() and leaves_repo(info.name, info.linkname):
            info.linkname = "../" * (info.name.count("/") + 1) + STAND_IN
        if info.isdir():
            info.mode |= 0o700
        return info

    return _tar(repo, [name for name in sorted(os.listdir(repo)) if name != ".git"], owner)


def _git_tar(repo: Path) -> bytes:
    def root_read_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isfile() or info.isdir()):
            return None  # our own .git holds neither links nor special files
        info.uid = info.gid = 0
        info.mode = 0o555 if info.isdir() else 0o444
        return info

    return _tar(repo, [".git"], root_read_only)


def _tar(repo: Path, names: list[str], fix: Any) -> bytes:
    def common(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        info.uname = info.gname = ""
        info.mtime = int(info.mtime)  # a fractional mtime costs a PAX header per entry
        return fix(info)

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(str(repo / name), arcname=name, recursive=True, filter=common)
    return buf.getvalue()
