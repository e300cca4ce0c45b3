"""The side of the second judge that runs repository code: forked by the keeper before it reads the key.

The child first closes what it must not hold (stdin, which still carries the key; the signed channel; every
fd but stdout, stderr and its own pipe to the keeper), then takes on the run's context (context.py) and forks
one process per group of cases, one after the other: each loads the test modules, runs its cases and writes
what it saw as JSON lines on the pipe, unsigned (the keeper checks and signs them). Per group the child writes
`begin`, and `exit` with how the process ended (it waits for it, within the group's time; `oom` when the kernel's
count of the box's out-of-memory kills rose meanwhile): a group whose process ends without its `done` ended behind
the judge's back, unless the memory limit ended it. Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from typing import Any, Callable

MAX_FD = 65536
_dumps, _write = json.dumps, os.write


class Sender:
    """JSON lines on the keeper's pipe, written whole (a record never interleaves with another)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __call__(self, record: dict[str, Any]) -> None:
        line = (_dumps(record, sort_keys=True, default=repr) + "\n").encode()
        try:
            while line:
                line = line[_write(self.fd, line):]
        except OSError:
            pass


def seal(keep: tuple[int, ...]) -> None:
    """Before anything else: stdin (the key's pipe) becomes /dev/null, and every other fd but 1, 2 and `keep`
    is closed (the signed channel among them)."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    if null != 0:
        os.close(null)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, MAX_FD)


def zygote(job: dict[str, Any], out_fd: int, ack_fd: int, enter: Callable[[], Any],
           run_group: Callable[..., None]) -> None:
    """Never returns: the groups, each in a process of its own (the next only once the keeper has signed what
    the last one said: its byte on `ack_fd`), then `fin`."""
    seal((out_fd, ack_fd))
    send = Sender(out_fd)
    try:
        os.setpgid(0, 0)
        state = enter()
        budget = float(job.get("group_s") or 60.0)
        for group, cases in groups(job["cases"]):
            send({"k": "begin", "group": group})
            kills = _oom_kills()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(ack_fd)
                    os.setpgid(0, 0)
                    _default_signals()
                    run_group(state, group, cases, send)
                    send({"k": "done", "group": group})
                finally:
                    _flush()
                    os._exit(0)
            ended = _wait(pid, time.monotonic() + budget)
            if ended["signal"] == signal.SIGKILL.value and not ended["timed_out"] and _oom_kills() > kills:
                ended["oom"] = True  # the box's memory limit ended it: the kernel's count says so, not the group
            send({"k": "exit", "group": group, **ended})
            if not _acknowledged(ack_fd, time.monotonic() + budget):
                break
        send({"k": "fin"})
    finally:
        _flush()
        os._exit(0)


def groups(cases: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Cases by their `group` (each case its own group when none is named), in the order they come."""
    out: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        out.setdefault(str(case.get("group") or case["id"]), []).append(case)
    return list(out.items())


def _wait(pid: int, deadline: float) -> dict[str, Any]:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            _kill_group(pid)
            os.waitpid(pid, 0)
            return {"timed_out": True, "status": None, "signal": signal.SIGKILL.value}
        time.sleep(0.002)
    _kill_group(pid)  # what the group's process left running goes with it
    if os.WIFSIGNALED(status):
        return {"timed_out": False, "status": None, "signal": os.WTERMSIG(status)}
    return {"timed_out": False, "status": os.WEXITSTATUS(status), "signal": None}


OOM_COUNTS = (("/sys/fs/cgroup/memory.events", "oom_kill"), ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"))
"""Where the kernel counts the box's out-of-memory kills: cgroup v2, then v1 (a container sees its own cgroup)."""


def _oom_kills(counts: tuple[tuple[str, str], ...] = OOM_COUNTS) -> int:
    """The box's out-of-memory kills so far, from the first of `counts` (file, key) that can be read (0 where none
    can: a kill is then not told apart)."""
    for path, key in counts:
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except (OSError, ValueError):
            continue
    return 0


def _acknowledged(fd: int, deadline: float) -> bool:
    """The keeper's byte for the group just ended (False: it is gone or too slow; no more groups run)."""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
        if ready:
            return os.read(fd, 1) == b"."
    return False


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _default_signals() -> None:
    """As a fresh interpreter has them (the keeper ignores some; a test must not notice)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
