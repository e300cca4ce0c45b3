"""Candidate checks at the cost of the tests: pytest runs forked from a warm interpreter (sandbox/warm.py).

The tool server keeps one warm parent per test interpreter (`python`, `python3`), started on the first
check under the same environment as any test (runner.child_env: safe-path mode, the repo root at the
end of sys.path), and excluded from the sweep that follows every test (runner.KEEP). A check sends the
pytest arguments and two pipe ends over a SOCK_SEQPACKET socket; the forked child writes its output to
one and a line per test phase to the other; at the deadline its session is killed. What comes back
(data: "passed", "failed" node ids, "exit") is written by the code under test, so it only ranks a
candidate: the chosen diff is verified from scratch with the signed evidence. A parent that dies or
answers nonsense is dropped and the check answers an error (the host then runs the check cold).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import time

from sandbox import runner
from sandbox.commands import check_command
from sandbox.protocol import ToolResult

WARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm.py")
MAX_RECORD_BYTES = 4 * 1024 * 1024
START_DEADLINE_S = 120.0


class WarmParent:
    def __init__(self, python: str, repo: str) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([python, WARM, str(theirs.fileno())], cwd=repo, env=runner.child_env(repo),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        runner.KEEP.add(self.proc.pid)
        self.ready: dict[str, object] | None = None

    def message(self, deadline_at: float) -> dict[str, object]:
        self.sock.settimeout(max(deadline_at - time.monotonic(), 0.01))
        try:
            raw = self.sock.recv(65536)
        except (TimeoutError, OSError) as e:
            raise ConnectionError(f"the warm parent did not answer: {e}") from e
        if not raw:
            raise ConnectionError("the warm parent is gone")
        body = json.loads(raw)
        if not isinstance(body, dict) or "error" in body:
            raise ConnectionError(f"the warm parent refused: {body}")
        return body

    def start(self, deadline_at: float) -> None:
        if self.ready is None:
            self.ready = self.message(min(deadline_at, time.monotonic() + START_DEADLINE_S))

    def close(self) -> None:
        runner.KEEP.discard(self.proc.pid)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1.0)


_parents: dict[str, WarmParent] = {}


def pytest_args(argv: list[str]) -> list[str] | None:
    """The arguments after `pytest` / `python -m pytest`; None for any other command."""
    if argv[:1] == ["pytest"]:
        return argv[1:]
    if len(argv) >= 3 and argv[0] in ("python", "python3") and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    return None


def check(command: str, allow: tuple[tuple[str, ...], ...], repo: str, sweep_mode: str,
          deadline_at: float, start_only: bool = False) -> ToolResult:
    try:
        argv = check_command(command, allow)
    except ValueError as e:
        return ToolResult.error(str(e))
    args = pytest_args(argv)
    if args is None:
        return ToolResult.error("check runs pytest commands only")
    python = "python3" if argv[0] == "python3" else "python"
    parent = _parents.get(python)
    try:
        if parent is None or parent.proc.poll() is not None:
            if parent is not None:
                parent.close()
            parent = _parents[python] = WarmParent(python, repo)
        if start_only:  # its imports run while the host does something else; the next check waits
            return ToolResult(is_error=False, output="warm parent starting", exit_code=0)
        parent.start(deadline_at)
        return _fork(parent, args, deadline_at, sweep_mode)
    except (ConnectionError, OSError, ValueError) as e:
        _parents.pop(python).close()
        runner.sweep(sweep_mode)
        return ToolResult.error(f"warm check failed: {e}")


def _fork(parent: WarmParent, args: list[str], deadline_at: float, sweep_mode: str) -> ToolResult:
    out_r, out_w = os.pipe()
    rec_r, rec_w = os.pipe()
    try:
        socket.send_fds(parent.sock, [json.dumps({"args": args}).encode()], [out_w, rec_w])
    finally:
        os.close(out_w)
        os.close(rec_w)
    capture, records = runner.HeadTail(8 * 1024, 8 * 1024), bytearray()
    try:
        pid = int(parent.message(deadline_at)["pid"])  # type: ignore[call-overload]
        timed_out, code = _drain(parent, pid, out_r, rec_r, capture, records, deadline_at)
    finally:
        os.close(out_r)
        os.close(rec_r)
    swept = runner.sweep(sweep_mode)
    passed, failed = outcomes(bytes(records))
    head = "timed out" if timed_out else f"exit code {code}"
    return ToolResult(is_error=timed_out, output=head + ("" if swept else " [some processes survived]") + "\n"
                      + capture.text(), exit_code=code, timed_out=timed_out,
                      data={"passed": sorted(passed), "failed": sorted(failed)})


def _drain(parent: WarmParent, pid: int, out_r: int, rec_r: int, capture: runner.HeadTail, records: bytearray,
           deadline_at: float) -> tuple[bool, int | None]:
    """Read both pipes until the child's exit is reported and they are drained (or the deadline)."""
    sinks = {out_r: capture.add, rec_r: lambda b: records.extend(b[: max(0, MAX_RECORD_BYTES - len(records))])}
    code: int | None = None
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        sel.register(parent.sock, selectors.EVENT_READ)
        grace_until = None
        while sel.get_map() and (grace_until is None or time.monotonic() < grace_until):
            if not timed_out and time.monotonic() >= deadline_at:
                timed_out = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                grace_until = time.monotonic() + 5.0
            for key, _ in sel.select(0.05):
                if key.fileobj is parent.sock:
                    sel.unregister(parent.sock)
                    code = int(parent.message(time.monotonic() + 5.0)["exit"])  # type: ignore[call-overload]
                    grace_until = min(grace_until or 1e18, time.monotonic() + runner.EXIT_GRACE_S)
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    sinks[key.fd](chunk)
                else:
                    sel.unregister(key.fd)
    if code is None:  # killed at the deadline (or a pipe kept open): wait for the parent's word on it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        code = int(parent.message(time.monotonic() + 5.0)["exit"])  # type: ignore[call-overload]
    return timed_out, code


def outcomes(records: bytes) -> tuple[set[str], set[str]]:
    """Node ids that passed (a `call` phase passed, no phase failed) and that failed (any phase)."""
    passed: set[str] = set()
    failed: set[str] = set()
    for line in records.splitlines():
        try:
            rec = json.loads(line)
            node, when, outcome = str(rec["id"]), rec["when"], rec["outcome"]
        except (ValueError, KeyError, TypeError):
            continue
        if outcome == "failed":
            failed.add(node)
        elif when == "call" and outcome == "passed":
            passed.add(node)
    return passed - failed, failed
