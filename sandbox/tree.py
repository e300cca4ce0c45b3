"""The work tree a box is sent ahead of the tool server's hello: `tree N` padded to HEADER bytes, then N bytes
of a tar (boot.py says why and when). `header` is what the host writes; `Tree` unpacks it in the box with
`head -c N | tar`, reading no byte past the tree. Only os is loaded: boot.py imports this before tar starts.
"""

from __future__ import annotations

import os

HEADER = 32
"""Bytes of `tree N` and its padding: read whole with plain reads, so no byte of the tree is buffered."""
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
TAR = ("tar", "--extract", "--file=-", "--no-same-owner", "--no-same-permissions", "--warning=no-timestamp")


def header(size: int) -> bytes:
    """What the host sends ahead of `size` bytes of tree (0: none follows)."""
    return f"tree {size}".ljust(HEADER - 1).encode() + b"\n"


class Tree:
    """`head -c N | tar --extract` in the repo directory, fed straight from stdin (fd 0)."""

    def __init__(self, repo: str) -> None:
        self.repo, self.size, self.failed = repo, 0, ""
        self._pids: list[int] = []
        self._err = -1
        line = b""
        while len(line) < HEADER and (got := os.read(0, HEADER - len(line))):
            line += got
        words = line.split()
        if len(line) != HEADER or len(words) != 2 or words[0] != b"tree" or not words[1].isdigit():
            self.failed, self.desynced = f"cannot unpack the repository: bad tree header {line[:40]!r}", True
            return
        self.size, self.desynced = int(words[1]), False
        if self.size:
            self._spawn()

    def _spawn(self) -> None:
        self._err = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)  # any length of complaint, no pipe to fill
        null = os.open(os.devnull, os.O_RDWR)
        read_end, write_end = os.pipe()
        try:
            io = [(os.POSIX_SPAWN_DUP2, self._err, 2)]
            self._pids.append(os.posix_spawnp("head", ["head", "-c", str(self.size)], ENV, file_actions=[
                (os.POSIX_SPAWN_DUP2, write_end, 1), *io]))
            self._pids.append(os.posix_spawnp("tar", [*TAR, f"--directory={self.repo}"], ENV, file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0), (os.POSIX_SPAWN_DUP2, null, 1), *io]))
        except OSError as e:  # no head or tar in the image: nothing may read the tree, so the stream is lost
            self.failed, self.desynced = f"cannot unpack the repository: {e.filename}: {e.strerror}", True
            for pid in self._pids:
                os.kill(pid, 9)
        finally:
            for fd in (null, read_end, write_end):
                os.close(fd)

    def finish(self) -> str:
        """Waits for head and tar; "" when every file is in, else what went wrong. `desynced` then says
        whether bytes of the tree may still be unread on stdin (head did not read them all)."""
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in self._pids]
        self._pids = []
        if codes and codes[0] != 0:
            self.desynced = True
        if not self.failed and any(codes):
            self.failed = f"cannot unpack the repository: head, tar exited with {codes}: {self._tail()}"
        if self._err >= 0:
            os.close(self._err)
            self._err = -1
        return self.failed

    def _tail(self, limit: int = 600) -> str:
        os.lseek(self._err, max(0, os.lseek(self._err, 0, os.SEEK_END) - limit), os.SEEK_SET)
        lines = os.read(self._err, limit).decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no message"
