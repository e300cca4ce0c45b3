"""Child processes under a deadline: capped draining, and the kill sweep that leaves nothing behind.

`setsid` escapes a process-group kill, so after every test the server also sweeps:
- "group": kill every descendant of the server. The server is a child subreaper (see server.py), so
  orphans re-parent to it instead of init and stay findable by walking /proc's PPid chain.
- "uid" (container): `kill(-1, SIGKILL)` until /proc shows no process of our uid but us and pid 1.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sandbox.commands import check_command
from sandbox.evidence import HARNESS_DIR, PLUGIN, EvidenceChannel, harness_argv
from sandbox.protocol import ToolResult

SWEEP_SECONDS = 5.0
EXIT_GRACE_S = 0.2
KEEP: set[int] = set()
"""Processes the sweep spares: the warm parents of candidate checks (sandbox/forks.py), which run no
repository code themselves; their forked children are swept like any test."""


class HeadTail:
    """Keeps the first and last bytes of a stream and counts what fell between."""

    def __init__(self, head: int = 32 * 1024, tail: int = 32 * 1024) -> None:
        self.head, self.tail = bytearray(), bytearray()
        self.head_max, self.tail_max = head, tail
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        extra = len(self.tail) - self.tail_max
        if extra > 0:
            del self.tail[:extra]
            self.dropped += extra

    def text(self) -> str:
        note = f"\n[… {self.dropped} bytes cut …]\n" if self.dropped else ""
        return self.head.decode(errors="replace") + note + self.tail.decode(errors="replace")


def drain(proc: subprocess.Popen[bytes], sink: Callable[[bytes], None], deadline_at: float,
          more: dict[int, Callable[[bytes], None]] | None = None) -> bool:
    """Feed proc's stdout to `sink` (and each fd of `more` to its sink) until it exits; True when the
    deadline came first. Stops shortly after the process exits even if an escaped child holds a pipe open."""
    assert proc.stdout is not None
    sinks = {proc.stdout.fileno(): sink, **(more or {})}
    grace_until = None
    with selectors.DefaultSelector() as sel:
        for fd in sinks:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if grace_until is None and proc.poll() is not None:
                grace_until = now + EXIT_GRACE_S
            if grace_until is not None and now >= grace_until:
                return False
            if grace_until is None and now >= deadline_at:
                return True
            if not sel.get_map():
                return _wait(proc, deadline_at)
            ready = sel.select(min(0.05, max(deadline_at - now, 0.0)))
            if not ready and grace_until is not None:
                return False
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if chunk:
                    sinks[key.fd](chunk)
                else:
                    sel.unregister(key.fd)


def _wait(proc: subprocess.Popen[bytes], deadline_at: float) -> bool:
    try:
        proc.wait(timeout=max(deadline_at - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return True
    return False


@dataclass
class Captured:
    returncode: int | None
    stderr: str
    timed_out: bool


def run_capped(argv: list[str], cwd: str, env: dict[str, str], deadline_at: float,
               sink: Callable[[bytes], None]) -> Captured:
    """Run a helper (git, rg) with stdout streamed to `sink`, stderr kept short, and a deadline."""
    import tempfile  # on the first run: as in tools.git_diff

    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, start_new_session=True)
        with proc:
            timed_out = drain(proc, sink, deadline_at)
            kill_group(proc)
            proc.wait()
        err.seek(0)
        text = err.read(4096).decode(errors="replace").strip()
    return Captured(proc.returncode, text, timed_out)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group the child leads, and the child itself if it left the group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            proc.kill()


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    zombie: bool
    uids: tuple[int, ...]


def processes() -> Iterator[Proc]:
    """Every process /proc shows (those that vanish while we look are skipped)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        uids = tuple(int(u) for u in fields.get("Uid", "").split())
        yield Proc(int(name), int(fields["PPid"]), fields["State"].strip().startswith("Z"), uids)


def descendants(root: int) -> list[int]:
    """Live (non-zombie) processes whose PPid chain leads to `root`."""
    procs = list(processes())
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child.pid)
            if not child.zombie:
                found.append(child.pid)
    return found


def reap() -> None:
    """Collect exited children (orphans re-parent to us). Only call when no Popen is still running."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _others_of_uid(uid: int) -> list[int]:
    me = os.getpid()
    return [p.pid for p in processes()
            if p.pid not in (me, 1, *KEEP) and not p.zombie and uid in (p.uids[:1] + p.uids[2:3])]


def sweep(mode: str) -> bool:
    """Kill what the last test left running; False if something survived SWEEP_SECONDS."""
    end = time.monotonic() + SWEEP_SECONDS
    uid = os.getuid()
    while True:
        left = [p for p in descendants(os.getpid()) if p not in KEEP] if mode == "group" else _others_of_uid(uid)
        if not left:
            reap()
            return True
        if time.monotonic() > end:
            return False
        targets = left if mode == "group" or KEEP else [-1]  # kill(-1) would take the warm parents too
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reap()
        time.sleep(0.005)


def child_env(repo: str, evidence: EvidenceChannel | None = None) -> dict[str, str]:
    """Safe-path mode (the repo is not ahead of site-packages; the harness sitecustomize appends it after)."""
    env = {
        "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "PYTHONUNBUFFERED": "1",
        "PYTHONSAFEPATH": "1",
        "PYTHONPATH": HARNESS_DIR,
        "PATCHER_REPO_ROOT": repo,
    }
    if evidence is not None:
        env["PATCHER_EVIDENCE"] = evidence.env_value
        env["PYTEST_ADDOPTS"] += f" -p {PLUGIN}"
    return env


def prefer_oom_kill() -> None:
    """In the child before exec: let the OOM killer take the test rather than the server."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


def run_test(command: str, allow: tuple[tuple[str, ...], ...], repo: str, report_dir: str,
             sweep_mode: str, deadline_at: float, evidence: bool = False, heldout: str = "") -> ToolResult:
    """Run an allowlisted test command without a shell; a failing test is a result, not an error.

    With `evidence`, the harness reports each test on a signed channel (evidence.py); data["evidence"]. With
    `heldout` too, the held-out judge's inputs are asked inside the run (judge/heldout/inrun.py)."""
    try:
        argv = check_command(command, allow)
    except ValueError as e:
        return ToolResult.error(str(e))
    os.makedirs(report_dir, exist_ok=True)
    capture = HeadTail()
    channel = EvidenceChannel(heldout) if evidence else None
    try:
        return _run(harness_argv(argv) if channel else argv, repo, channel, capture, sweep_mode, deadline_at)
    finally:
        if channel:
            channel.close()


def _run(argv: list[str], repo: str, channel: EvidenceChannel | None, capture: HeadTail, sweep_mode: str,
         deadline_at: float) -> ToolResult:
    try:
        proc = subprocess.Popen(argv, cwd=repo, env=child_env(repo, channel), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=prefer_oom_kill, pass_fds=channel.child_fds if channel else ())
    except OSError as e:
        return ToolResult.error(f"could not start {argv[0]!r}: {e}; check that it is installed in the "
                                "environment (retrying the same command will not help)")
    return finish(proc, channel, capture, sweep_mode, deadline_at)


def finish(proc: subprocess.Popen[bytes], channel: EvidenceChannel | None, capture: HeadTail, sweep_mode: str,
           deadline_at: float) -> ToolResult:
    """Reads the run's output (and its evidence records) until it exits or the deadline passes, then kills
    what it left behind: the result the model and the host see."""
    more: dict[int, Callable[[bytes], None]] = {}
    if channel:
        channel.started()
        more[channel.read_fd] = channel.add
    with proc:
        timed_out = drain(proc, capture.add, deadline_at, more)
        kill_group(proc)
        proc.wait()
    return result(proc, channel, capture, timed_out, sweep(sweep_mode))


def result(proc: subprocess.Popen[bytes], channel: EvidenceChannel | None, capture: HeadTail, timed_out: bool,
           swept: bool) -> ToolResult:
    """What a finished run comes to (after the sweep)."""
    return ToolResult(is_error=timed_out, output=_summary(proc.returncode, timed_out, swept, capture),
                      exit_code=proc.returncode, truncated_bytes=capture.dropped, timed_out=timed_out,
                      data={"evidence": channel.result()} if channel else {})


def _summary(code: int | None, timed_out: bool, swept: bool, capture: HeadTail) -> str:
    if timed_out:
        head = ("timed out: the deadline passed, so the test command and every process it started were "
                "killed; run fewer or faster tests (retrying the same command will time out again)")
    elif code is not None and code < 0:
        head = f"killed by signal {-code}"
    else:
        head = f"exit code {code}"
    if not swept:
        head += "\n[warning: some processes the test started could not be killed]"
    return head + "\n" + (capture.text() or "(no output)")
