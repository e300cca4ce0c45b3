"""sandbox/boot.py, run here as a container runs it: the work tree sent ahead of the hello is unpacked by the
image's head and tar while the server loads, the stream stays in step, and a tree that cannot be unpacked
ends the start with tar's own words, never a server answering tools on half a tree."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from patcher.sandbox.pool import BOOT, SERVER_FLAGS, TREE_FIRST
from sandbox.protocol import ReadFileRequest, decode_result, encode_request
from sandbox.tree import HEADER, header

ROOT = Path(__file__).resolve().parents[2]
KEY = b"k" * 32


def tar_of(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def hello() -> bytes:
    return json.dumps({"hello": {"key": KEY.hex(), "allow": [], "base": "HEAD"}}).encode() + b"\n"


def boot(repo: Path, first: bool = True) -> subprocess.Popen[bytes]:
    """As a box started for its job runs it (`first`: its tree comes at once), or as a pool's spare."""
    flags = TREE_FIRST if first else ()
    return subprocess.Popen([sys.executable, *SERVER_FLAGS, "-c", BOOT, "--repo", str(repo), "--sweep", "group",
                             *flags],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=repo,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def ready_of(proc: subprocess.Popen[bytes], data: bytes) -> tuple[str, bool]:
    """Sends `data`, then reads the ready line: (its output, whether it is an error)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    _, result = decode_result(proc.stdout.readline(), KEY)
    return result.output, result.is_error


def test_the_header_is_fixed_width() -> None:
    assert len(header(0)) == len(header(10**15)) == HEADER and header(512).startswith(b"tree 512 ")


@pytest.mark.parametrize("late", [False, True], ids=["cold", "started_ahead"])
def test_a_tree_sent_ahead_of_the_hello_is_unpacked_and_the_stream_stays_in_step(tmp_path: Path, late: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    tree = tar_of({"pkg/mod.py": b"x = 1\n", "README.md": b"hello\n" * 5000}, {"link": "pkg/mod.py"})
    proc = boot(repo, first=not late)
    try:
        if late:  # a pool's spare: its server loads first and waits for the header
            time.sleep(0.5)
            assert proc.poll() is None
        assert ready_of(proc, header(len(tree)) + tree + hello()) == ("ready", False)
        assert (repo / "pkg/mod.py").read_bytes() == b"x = 1\n" and os.readlink(repo / "link") == "pkg/mod.py"
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(encode_request(1, ReadFileRequest("pkg/mod.py"), 10))
        proc.stdin.flush()
        call_id, result = decode_result(proc.stdout.readline(), KEY)
        assert (call_id, result.output) == (1, "     1\tx = 1\n")
    finally:
        proc.kill()
        proc.communicate()  # closes the pipes


@pytest.mark.parametrize(("data", "said"), [
    (b"this is no tar archive, only text" * 400, "does not look like a tar archive"),
    (tar_of({"../escaped.py": b"x = 1\n", "kept.py": b"y = 2\n"}), "contains '..'"),
], ids=["garbage", "climbing_name"])
def test_a_tree_tar_refuses_ends_the_start_with_its_words(tmp_path: Path, data: bytes, said: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    proc = boot(repo)
    try:
        output, is_error = ready_of(proc, header(len(data)) + data + hello())
        assert is_error and output.startswith("cannot unpack the repository: head, tar exited with"), output
        assert said in output, output
        assert proc.wait(10) == 2  # no tool is answered on half a tree
        assert not (tmp_path / "escaped.py").exists()
    finally:
        proc.kill()
        proc.communicate()  # closes the pipes


def test_a_stream_that_ends_inside_the_tree_ends_the_server(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    tree = tar_of({"a.py": b"a = 1\n" * 1000})
    proc = boot(repo)
    _, err = proc.communicate(header(len(tree)) + tree[: len(tree) // 2], timeout=20)
    assert proc.returncode == 2
    assert b"cannot unpack the repository" in err and b"tar" in err, err


def test_a_bad_header_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    proc = boot(repo)
    _, err = proc.communicate(hello(), timeout=20)  # a hello where the header belongs: nothing can be trusted
    assert proc.returncode == 2 and b"bad tree header" in err, err
