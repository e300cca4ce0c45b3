from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import StagedRepo, stage_repo
from patcher.intake.repo import STAND_IN, leaves_repo
from sandbox.commands import DEFAULT_ALLOWLIST
from sandbox.protocol import GitDiffRequest, ReadFileRequest
from sandbox.tools import Context, ToolError, git_diff, read_file
from tests.support.helpers import git, make_repo


def test_work_tree_with_uncommitted_and_untracked_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"pkg/m.py": "x = 1\n", ".gitignore": "*.log\nbuild/\n"})
    (repo / "pkg/m.py").write_text("x = 2\n")
    (repo / "new.py").write_text("y = 1\n")
    (repo / "debug.log").write_text("ignored\n")
    staged = stage_repo(str(repo))
    try:
        assert staged.dirty and staged.source_commit == git(repo, "rev-parse", "HEAD")
        assert (staged.path / "pkg/m.py").read_text() == "x = 2\n"
        assert (staged.path / "new.py").exists() and not (staged.path / "debug.log").exists()
        assert staged.files == [".gitignore", "new.py", "pkg/m.py"]
        assert git(staged.path, "rev-parse", "HEAD") == staged.base_commit
        assert git(staged.path, "status", "--porcelain") == ""
    finally:
        staged.cleanup()


def test_hostile_git_config_never_runs_and_never_travels(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    marker = tmp_path / "pwned"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "remote.origin.url", "https://user:secret-token@example.com/r.git")
    (repo / "a.py").write_text("a = 2\n")
    staged = stage_repo(str(repo))
    try:
        assert not marker.exists()
        assert "secret-token" not in (staged.path / ".git/config").read_text()
    finally:
        staged.cleanup()


def test_symlinks_are_kept_as_links_and_device_nodes_dropped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    os.symlink("/etc/passwd", repo / "leak")
    os.mkfifo(repo / "fifo")
    git(repo, "add", "leak")
    git(repo, "commit", "-qm", "link")
    umask = os.umask(0o077)  # a private umask: the staging .git must still be readable by a box's user
    try:
        staged = stage_repo(str(repo))
    finally:
        os.umask(umask)
    try:
        assert os.readlink(staged.path / "leak") == "/etc/passwd"
        assert not (staged.path / "fifo").exists()
        tree, git_dir = _tar_members(staged.tree_tar(47213)), _tar_members(staged.git_tar())
        assert tree["leak"].issym() and tree["leak"].linkname == f"../{STAND_IN}"
        assert tree["a.py"].uid == 47213 and tree["a.py"].mode & 0o200
        assert not [name for name in tree if name in (".", "") or name.split("/")[0] == ".git"]  # the root is a mount
        assert git_dir[".git/config"].uid == 0 and not git_dir[".git/config"].mode & 0o222
        assert git_dir[".git"].mode == 0o555 and all(m.isfile() or m.isdir() for m in git_dir.values())
        assert all(name.split("/")[0] == ".git" for name in git_dir)
        for top, dirs, names in os.walk(staged.path / ".git"):  # a box may mount it: every user can read it
            assert all(os.stat(os.path.join(top, n)).st_mode & 0o444 == 0o444 for n in names)
            assert all(os.stat(os.path.join(top, d)).st_mode & 0o555 == 0o555 for d in dirs)
    finally:
        staged.cleanup()


def test_url_and_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    first = git(repo, "rev-parse", "HEAD")
    (repo / "a.py").write_text("a = 2\n")
    git(repo, "commit", "-qam", "two")
    staged = stage_repo(f"file://{repo}", ref=first)
    try:
        assert (staged.path / "a.py").read_text() == "a = 1\n"
        assert staged.source_commit == first and not staged.dirty
    finally:
        staged.cleanup()


@pytest.mark.parametrize("source", ["/nonexistent/path", "not a url"])
def test_bad_sources(source: str) -> None:
    with pytest.raises(BadInput):
        stage_repo(source)


def test_not_a_git_repo(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a git repository"):
        stage_repo(str(tmp_path))


def test_unknown_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    with pytest.raises(BadInput, match="cannot check out"):
        stage_repo(str(repo), ref="no-such-branch")


@pytest.mark.parametrize(("rel", "target", "leaves"), [
    ("a", "/etc/passwd", True), ("a", "..", True), ("a", "../x", True), ("pkg/a", "../../x", True),
    ("pkg/a", "../x", False), ("pkg/a", "..", False), ("a", "b/../../x", True), ("a", "b/../c", False),
    ("a", ".", False), ("a", ".git/config", False), ("a", "./../x", True), ("pkg/sub/a", "../../../../etc", True),
    ("a", "..foo", False), ("pkg/a", "x/../../..", True),
])
def test_leaves_repo_is_lexical(rel: str, target: str, leaves: bool) -> None:
    assert leaves_repo(rel, target) is leaves


def _tar_members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


@pytest.fixture
def climbing(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n", "pkg/deep/m.py": "m = 1\n"})
    links = {"climb": "../../../etc/passwd", "abs": "/etc/passwd", "up": "..", "pkg/deep/up2": "../../../x",
             "inside": "a.py", "pkg/deep/back": "../../a.py", "pkg/deep/git": "../../.git/config"}
    for rel, target in links.items():
        os.symlink(target, repo / rel)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    return repo


def test_links_leaving_the_repo_get_a_dangling_stand_in_in_the_tar_only(climbing: Path) -> None:
    staged = stage_repo(str(climbing))
    try:
        outside = ["abs", "climb", "pkg/deep/up2", "up"]
        assert staged.outside_links == outside
        assert set(outside) < set(staged.files) and "inside" in staged.files
        assert os.readlink(staged.path / "climb") == "../../../etc/passwd"  # the staging copy is the truth
        assert git(staged.path, "cat-file", "-p", f"{staged.base_commit}:climb") == "../../../etc/passwd"
        flags = dict(line.split(" ", 1)[::-1] for line in git(staged.path, "ls-files", "-v").splitlines())
        assert {path for path, flag in flags.items() if flag == "S"} == set(outside)
        assert git(staged.path, "status", "--porcelain") == ""
        members = _tar_members(staged.tree_tar(47213))
        assert members["climb"].linkname == f"../{STAND_IN}"
        assert members["abs"].linkname == f"../{STAND_IN}"
        assert members["up"].linkname == f"../{STAND_IN}"
        assert members["pkg/deep/up2"].linkname == f"../../../{STAND_IN}"
        assert members["inside"].linkname == "a.py"
        assert members["pkg/deep/back"].linkname == "../../a.py"
        assert members["pkg/deep/git"].linkname == "../../.git/config"
        for m in members.values():  # unpacked in /workspace/repo: a stand-in is /workspace/<STAND_IN>, no further
            if m.issym():
                assert not os.path.normpath(os.path.join("/workspace/repo", os.path.dirname(m.name), m.linkname)
                                            ).startswith("/workspace/..")
    finally:
        staged.cleanup()


def _container_tree(staged: StagedRepo, dest: Path) -> Context:
    """The tree the container gets (its work tree and its .git unpacked in one directory); a Context for the
    server's tools."""
    repo = dest / "repo"
    repo.mkdir(parents=True)
    for data in (staged.tree_tar(os.getuid()), staged.git_tar()):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(repo, filter="tar")
    for d in [repo, *(p for p in repo.rglob("*") if p.is_dir() and not p.is_symlink())]:
        d.chmod(0o755 if ".git" in d.parts else d.stat().st_mode | 0o700)
    base = git(repo, "rev-parse", "HEAD")
    return Context(repo=os.path.realpath(repo), base=base, report_dir=str(dest / "reports"),
                   allow=DEFAULT_ALLOWLIST, sweep="group")


def test_in_the_container_tree_stand_ins_are_refused_and_git_diff_stays_empty(climbing: Path,
                                                                              tmp_path: Path) -> None:
    staged = stage_repo(str(climbing))
    try:
        ctx = _container_tree(staged, tmp_path / "workspace")
        deadline = time.monotonic() + 30
        assert git_diff(ctx, GitDiffRequest(), deadline).output == "no changes"
        for path in ("climb", "abs", "up", "pkg/deep/up2"):
            with pytest.raises(ToolError, match=r"^refused: .* resolves outside the repository"):
                read_file(ctx, ReadFileRequest(path), deadline)
        assert read_file(ctx, ReadFileRequest("pkg/deep/back"), deadline).output == "     1\ta = 1\n"
        (Path(ctx.repo) / "a.py").write_text("a = 2\n")
        diff = git_diff(ctx, GitDiffRequest(), deadline).data["diff"]
        assert [line for line in diff.splitlines() if line.startswith("diff --git")] == [
            "diff --git a/a.py b/a.py"]
    finally:
        staged.cleanup()


def test_a_container_diff_applies_with_host_git_to_a_copy_of_the_staging_tree(climbing: Path,
                                                                               tmp_path: Path) -> None:
    staged = stage_repo(str(climbing))
    try:
        ctx = _container_tree(staged, tmp_path / "workspace")
        (Path(ctx.repo) / "a.py").write_text("a = 2\n")
        (Path(ctx.repo) / "pkg/new.py").write_text("n = 1\n")
        diff = git_diff(ctx, GitDiffRequest(), time.monotonic() + 30).data["diff"]
        copy = tmp_path / "verify"
        shutil.copytree(staged.path, copy, symlinks=True)
        subprocess.run(["git", "apply", "--check", "-"], cwd=copy, input=diff, text=True, check=True)
        subprocess.run(["git", "apply", "-"], cwd=copy, input=diff, text=True, check=True)
        assert (copy / "a.py").read_text() == "a = 2\n" and (copy / "pkg/new.py").read_text() == "n = 1\n"
        assert os.readlink(copy / "climb") == "../../../etc/passwd"
        status = sorted(line.strip() for line in git(copy, "status", "--porcelain").splitlines())
        assert status == ["?? pkg/new.py", "M a.py"]
    finally:
        staged.cleanup()
