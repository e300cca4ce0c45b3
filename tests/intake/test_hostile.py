"""A hostile local repository: every program its `.git/config`, hooks or `.gitattributes` can name is planted,
each one leaving a marker file if it ever runs; staging (and `patcher fix`, up to where it needs Docker)
must leave no marker and stage the work tree's bytes as they are."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import CloneLimits, stage_repo
from patcher.intake.clone import clone_url
from tests.support.helpers import git, make_repo

HOOKS = ["applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
         "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
         "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
         "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
         "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
         "post-index-change"]


def _program(bin_dir: Path, marks: Path, name: str) -> str:
    """A script that records that it ran (and passes its input through, as a filter would)."""
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\ntouch {marks / name}\ncat\n")
    path.chmod(0o755)
    return str(path)


def _plant(repo: Path, tmp: Path) -> Path:
    """Every trick planted in `repo`; returns the directory where the markers would appear."""
    marks, bin_dir, hooks = tmp / "marks", tmp / "bin", tmp / "hooks"
    for d in (marks, bin_dir, hooks):
        d.mkdir()
    settings = {
        "filter.pw.clean": "clean", "filter.pw.smudge": "smudge", "filter.pw.process": "process",
        "filter.pw.required": "true", "diff.tx.textconv": "textconv", "diff.tx.command": "diffcmd",
        "merge.mx.driver": "mergedriver", "diff.external": "extdiff", "core.fsmonitor": "fsmonitor",
        "credential.helper": "credential", "core.sshCommand": "ssh", "core.askPass": "askpass",
        "core.pager": "pager", "core.editor": "editor", "sequence.editor": "seqeditor",
        "gpg.program": "gpg", "uploadpack.packObjectsHook": "packhook", "core.alternateRefsCommand": "altrefs",
        "receive.procReceiveRefs": "refs", "pager.status": "statuspager", "alias.status": "!aliased",
    }
    for key, name in settings.items():
        value = _program(bin_dir, marks, name) if name not in ("true", "refs") else name
        git(repo, "config", key, value if not key.startswith("alias") else f"!{_program(bin_dir, marks, 'alias')}")
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "core.hooksPath", str(hooks))
    for name in HOOKS:
        for where in (hooks, repo / ".git" / "hooks"):
            where.mkdir(exist_ok=True)
            (where / name).write_text(f"#!/bin/sh\ntouch {marks / ('hook-' + name)}\n")
            (where / name).chmod(0o755)
    included = tmp / "included.gitconfig"
    included.write_text(f"[filter \"inc\"]\n\tclean = {_program(bin_dir, marks, 'included-clean')}\n")
    git(repo, "config", "include.path", str(included))
    return marks


@dataclass
class Hostile:
    repo: Path
    linked: Path
    """A linked worktree of `repo` (its `.git` is a gitfile)."""
    marks: Path


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    """Set up with git first (a commit, a submodule entry, a linked worktree), then every trick planted."""
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n", "b.inc": "b\n",
                                      ".gitattributes": "* filter=pw diff=tx merge=mx\n*.inc filter=inc\n"})
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    sub = make_repo(repo / "sub", {"s.py": "s = 1\n", ".gitattributes": "* filter=sf\n"})
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{git(sub, 'rev-parse', 'HEAD')},sub")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))
    marks = _plant(repo, tmp_path)
    git(sub, "config", "filter.sf.clean", _program(tmp_path / "bin", marks, "submodule-clean"))
    git(sub, "config", "core.fsmonitor", _program(tmp_path / "bin", marks, "submodule-fsmonitor"))
    (sub / "s.py").write_text("s = 2\n")
    (repo / "a.py").write_text("a = 2\n")  # dirty: status must look at it (where a clean filter would run)
    (repo / "new.py").write_text("n = 1\n")
    os.utime(repo / "b.inc", (1, 1))  # stat-dirty, content clean: git re-reads it through the filter
    (linked / "a.py").write_text("a = 3\n")
    return Hostile(repo, linked, marks)


def _ran(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


def test_staging_the_work_tree_runs_nothing_the_repository_names(hostile: Hostile) -> None:
    repo, marks = hostile.repo, hostile.marks
    staged = stage_repo(str(repo))
    try:
        assert _ran(marks) == []
        assert (staged.path / "a.py").read_text() == "a = 2\n" and (staged.path / "new.py").exists()
        assert staged.dirty and staged.source_commit == git(repo, "rev-parse", "HEAD")
        assert "sub/s.py" not in staged.files
    finally:
        staged.cleanup()


@pytest.mark.parametrize("form", ["path", "file-url"])
def test_checking_out_a_ref_of_a_local_repository_runs_nothing(hostile: Hostile, form: str) -> None:
    repo, marks = hostile.repo, hostile.marks
    first = git(repo, "rev-parse", "HEAD~1")
    staged = stage_repo(str(repo) if form == "path" else f"file://{repo}", ref=first)
    try:
        assert _ran(marks) == []
        assert (staged.path / "a.py").read_text() == "a = 1\n" and not (staged.path / "new.py").exists()
        assert staged.source_commit == first and not staged.dirty
    finally:
        staged.cleanup()


def test_a_linked_worktree_is_staged_through_its_gitfile_and_runs_nothing(hostile: Hostile) -> None:
    marks = hostile.marks
    staged = stage_repo(str(hostile.linked))
    try:
        assert _ran(marks) == []
        assert (staged.path / "a.py").read_text() == "a = 3\n" and staged.dirty
    finally:
        staged.cleanup()


def test_patcher_fix_stages_a_hostile_repository_without_running_it(hostile: Hostile, tmp_path: Path) -> None:
    """The real CLI as a user runs it; the image does not exist, so the run ends (exit 3) right after staging."""
    repo, marks = hostile.repo, hostile.marks
    tb = tmp_path / "tb.txt"
    tb.write_text('Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nZeroDivisionError: x\n')
    env = {**os.environ, "PATCHER_SANDBOX_IMAGE": "patcher-no-such-image:i14", "PATCHER_HOME": str(tmp_path / "h")}
    argv = [str(Path(sys.executable).parent / "patcher"), "fix", str(repo), "--traceback", str(tb),
            "--engine", "offline", "--test", "python -c 1", "--json"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert _ran(marks) == []


def _daemon(base: Path) -> tuple[subprocess.Popen[bytes], int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={base}", "--listen=127.0.0.1",
                             f"--port={port}", "--reuseaddr", str(base)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("git daemon did not start")


def test_a_clone_past_the_size_cap_is_stopped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "srv" / "big", {"a.py": "a = 1\n"})
    (repo / "blob.bin").write_bytes(os.urandom(3 * 2**20))
    git(repo, "add", "blob.bin")
    git(repo, "commit", "-qm", "big")
    proc, port = _daemon(tmp_path / "srv")
    try:
        with pytest.raises(BadInput, match="grew past 1 MiB"):
            clone_url(f"git://127.0.0.1:{port}/big", None, tmp_path / "c1", CloneLimits(max_bytes=2**20))
        assert (clone_url(f"git://127.0.0.1:{port}/big", None, tmp_path / "c2", CloneLimits()) / "a.py").exists()
    finally:
        proc.kill()
        proc.wait()


def test_a_clone_from_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with pytest.raises(BadInput, match="longer than 1 s"):
            clone_url(f"git://127.0.0.1:{silent.getsockname()[1]}/x", None, tmp_path / "c", CloneLimits(timeout_s=1))
        assert time.monotonic() - started < 5


def test_an_http_clone_connects_to_the_pinned_address_not_a_fresh_dns_answer(tmp_path: Path) -> None:
    """`pinned.invalid` resolves nowhere; the clone succeeds only because git uses the pinned address."""
    src = make_repo(tmp_path / "src", {"a.py": "a = 1\n"})
    git(tmp_path, "clone", "-q", "--bare", str(src), str(tmp_path / "srv" / "r.git"))
    git(tmp_path / "srv" / "r.git", "update-server-info")  # the dumb HTTP protocol: plain files
    server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                               str(tmp_path / "srv")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split("port ")[1].split()[0])
        url = f"http://pinned.invalid:{port}/r.git"
        with pytest.raises(BadInput, match="cannot check out"):
            clone_url(url, None, tmp_path / "c1", CloneLimits(timeout_s=20))
        done = clone_url(url, None, tmp_path / "c2", CloneLimits(timeout_s=20,
                                                                   resolve=[f"pinned.invalid:{port}:127.0.0.1"]))
        assert (done / "a.py").read_text() == "a = 1\n"
    finally:
        server.kill()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
