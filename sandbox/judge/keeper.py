"""The second judge's key holder: the process the tool server starts, which never imports the repository.

It forks the child that runs repository code (child.py) *before* it reads the per-run key from stdin, so no
copy of the key, of this signed channel or of its fd exists in any process that runs a test; it then becomes
non-dumpable (a same-uid process cannot read its memory), ignores the signals a test could send it, reads what
the child writes on its pipe until the child is done or the time is up, checks it (accept.py) and signs what it
accepts on the channel the server reads (the HMAC-SHA256 lines of harness/patcher_channel.py).
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import signal
import time
from typing import Any, Callable

_write, _dumps, _sha256 = os.write, json.dumps, hashlib.sha256
MAX_BYTES = 8 * 1024 * 1024
PR_SET_DUMPABLE = 4


class Channel:
    def __init__(self, fd: int, key: bytes) -> None:
        self.fd, self.key, self.seq = fd, key, 0
        os.set_inheritable(fd, False)

    def emit(self, record: dict[str, Any]) -> None:
        body = _dumps({**record, "seq": self.seq}, sort_keys=True).encode()
        self.seq += 1
        block = self.key.ljust(64, b"\0")
        inner = _sha256(bytes(b ^ 0x36 for b in block) + body).digest()
        line = body + b"\t" + _sha256(bytes(b ^ 0x5C for b in block) + inner).hexdigest().encode() + b"\n"
        while line:
            line = line[_write(self.fd, line):]


def keep(job: dict[str, Any], start_child: Callable[[int, int], None], state: Any) -> int:
    """Fork the child (`start_child(write_fd, ack_fd)` never returns), then read, check and sign line by line
    (`state`: accept.Accept). After each group the child waits for the keeper's byte on `ack`, so the base's
    outcomes are signed before any of the diff's code runs, whatever that code then does to this process."""
    read_fd, write_fd = os.pipe()
    ack_r, ack_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.close(ack_w)
        start_child(write_fd, ack_r)
        os._exit(70)  # start_child never returns; this is a guard
    os.close(write_fd)
    os.close(ack_r)
    key = _read_key()
    _harden()
    channel = Channel(int(job["record_fd"]), key)
    ended = _read(read_fd, pid, time.monotonic() + float(job.get("budget_s") or 120.0), channel, state, ack_w)
    for record in state.finish(ended):
        channel.emit(record)
    channel.emit({"k": "end", "exit": 0})
    return 0


def _read_key() -> bytes:
    chunks = []
    while True:
        chunk = os.read(0, 256)
        if not chunk:
            break
        chunks.append(chunk)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return bytes.fromhex(b"".join(chunks).decode().strip())


def _harden() -> None:
    """Non-dumpable (no ptrace, no /proc/PID/mem for a test of the same uid); deaf to catchable signals."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except Exception:
        pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
                signal.SIGPIPE, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_IGN)


def _read(fd: int, pid: int, deadline: float, channel: Channel, state: Any, ack: int) -> dict[str, Any]:
    """Sign what the child writes as it comes, until its `fin` (or EOF, shortly after it ended, or the deadline);
    how it ended."""
    buf, total, ended, grace, exits = bytearray(), 0, None, None, 0  # type: ignore[var-annotated]
    while not state.fin:
        now = time.monotonic()
        if ended is None:
            ended = _ended(pid)
            grace = now + 0.2 if ended is not None else None
        if now >= (grace or deadline):
            break
        ready, _, _ = select.select([fd], [], [], min((grace or deadline) - now, 0.05))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        total += len(chunk)
        if not chunk or total > MAX_BYTES:
            if chunk:
                channel.emit({"k": "forged", "group": state.group or state.last,
                              "why": f"the test process wrote over {MAX_BYTES} bytes to the judge"})
            break
        buf += chunk
        *lines, rest = bytes(buf).split(b"\n")
        buf = bytearray(rest)
        for line in lines:
            for record in state.take(line):
                channel.emit(record)
        if state.exits > exits:
            with contextlib.suppress(OSError):
                os.write(ack, b"." * (state.exits - exits))
            exits = state.exits
    os.close(fd)
    os.close(ack)
    return ended or _end(pid)


def _ended(pid: int) -> dict[str, Any] | None:
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        return None
    if os.WIFSIGNALED(status):
        return {"timed_out": False, "signal": os.WTERMSIG(status), "status": None}
    return {"timed_out": False, "signal": None, "status": os.WEXITSTATUS(status)}


def _end(pid: int) -> dict[str, Any]:
    """How the child ended; killed (its group too) when it is still running."""
    give_up = time.monotonic() + 1.0  # after its `fin` the child is about to exit: give it that moment
    while time.monotonic() < give_up:
        ended = _ended(pid)
        if ended is not None:
            return ended
        time.sleep(0.002)
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        with contextlib.suppress(OSError):
            kill()
    os.waitpid(pid, 0)
    return {"timed_out": True, "signal": signal.SIGKILL.value, "status": None}
