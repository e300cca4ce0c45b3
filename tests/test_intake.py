from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import stage_repo

from .helpers import git, make_repo


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
    staged = stage_repo(str(repo))
    try:
        assert os.readlink(staged.path / "leak") == "/etc/passwd"
        assert not (staged.path / "fifo").exists()
        with tarfile.open(fileobj=io.BytesIO(staged.tar(47213))) as tar:
            members = {m.name: m for m in tar.getmembers()}
        assert members["repo/leak"].issym() and members["repo/leak"].linkname == "/etc/passwd"
        assert members["repo/a.py"].uid == 47213 and members["repo/a.py"].mode & 0o200
        assert members["repo/.git/config"].uid == 0 and not members["repo/.git/config"].mode & 0o222
        assert members["repo"].uid == 0 and members["repo"].mode == 0o1777
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
