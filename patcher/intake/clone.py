"""Cloning a git URL for a job: bounded in time and in bytes, with none of the host's git config or helpers.

The clone is GitPython's `Repo.clone_from` over the hardened git layer (hostgit.py: patcher's own git
settings, no system or global config, so no credential helper or insteadOf rewrites of the host's; no
hooks; no ext:: or file:// transport; unsafe protocols and options refused) and is killed when it runs
past `timeout_s` or its directory grows past `max_bytes`; either is a BadInput naming the limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import Popen
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from patcher.errors import BadInput
from patcher.intake.access import GitAccess
from patcher.intake.hostgit import gitpython, repo_class, session, tail_progress


class CloneLimits(BaseModel):
    """How long a clone may take and how much it may write."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    timeout_s: float = Field(300.0, gt=0)
    """Seconds the clone and checkout may take together."""
    max_bytes: int = Field(1024 * 2**20, ge=1)
    """Bytes the clone directory (objects and checkout) may hold."""
    access: GitAccess = Field(default_factory=GitAccess.from_env)
    """The service's own credentials for private remotes (default: PATCHER_GIT_* of the environment)."""
    resolve: list[str] = Field(default_factory=list)
    """`host:port:address` pins for http(s) URLs (git's http.curloptResolve): git connects to the address
    that was checked, so a DNS answer that changes after the check (rebinding) is not followed."""


def clone_url(url: str, ref: str | None, dest: Path, limits: CloneLimits) -> Path:
    """`url` cloned into `dest` (GitPython's clone_from: unsafe protocols and options refused) and `ref`
    (default: the remote HEAD) checked out, detached."""
    pins = [arg for pin in limits.resolve for arg in ("-c", f"http.curloptResolve={pin}")]
    limits.access.check()
    bound = _Bound(dest, time.monotonic() + limits.timeout_s, limits)
    token = session.set(dataclasses.replace(limits.access.session(url, pins), watch=bound.watch))
    try:
        repo = bound.run(lambda: repo_class().clone_from(url, str(dest), progress=bound.tail, multi_options=[
            "--no-checkout", "--no-recurse-submodules"]), url, ref)
        try:
            bound.run(lambda: _wait(repo.git.checkout("--quiet", "--detach", ref or "HEAD", "--", as_process=True)),
                      url, ref)
        finally:
            repo.close()
    finally:
        session.reset(token)
        bound.stop()
    return dest


def _wait(proc: Any) -> None:
    """Waits for a GitPython process; GitCommandError when it failed."""
    _, err = proc.communicate()
    proc.wait(stderr=err)


class _Bound:
    """Kills the git processes of one clone (each in a session of its own, with the helpers they started)
    once the deadline passes or the directory grows past the cap, and says which."""

    def __init__(self, watched: Path, deadline: float, limits: CloneLimits) -> None:
        self.watched, self.deadline, self.limits = watched, deadline, limits
        self.procs: list[Popen[Any]] = []
        self.why: str | None = None
        self.tail = tail_progress()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="patcher-clone-bound", daemon=True)
        self._thread.start()

    def watch(self, proc: Popen[Any]) -> None:
        self.procs.append(proc)

    def run(self, body: Callable[[], Any], url: str, ref: str | None) -> Any:
        git = gitpython()
        try:
            done = body()
            self.why = self.why or self._over()  # a step quicker than one look of the watcher is held to it too
            if self.why:
                raise BadInput(self.why)
            return done
        except (git.GitCommandError, git.UnsafeProtocolError, git.UnsafeOptionError) as e:
            if self.why:
                raise BadInput(self.why) from None
            said = [*self.tail.lines, *str(getattr(e, "stderr", "") or "").splitlines(), str(e)]
            last = self.limits.access.redact(next((line.strip() for line in reversed(said) if _meaningful(line)), ""))
            # all of it: git's last line ("and the repository exists.") says nothing; ssh's and curl's do
            refused = self.limits.access.refused(url, self.limits.access.redact("\n".join(said)))
            raise refused or BadInput(f"cannot check out {ref or 'HEAD'} of {url}: {last}") from None

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._kill()

    def _loop(self) -> None:
        while not self._done.wait(0.1):
            self.why = self._over()
            if self.why:
                self._kill()
                return

    def _over(self) -> str | None:
        if time.monotonic() > self.deadline:
            return f"the clone took longer than {self.limits.timeout_s:.0f} s (the server's limit)"
        if _size(self.watched) > self.limits.max_bytes:
            return f"the clone grew past {self.limits.max_bytes // 2**20} MiB (the server's limit)"
        return None

    def _kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)  # its own session: the git helpers it started go too


def _meaningful(line: str) -> bool:
    """A line of git's that says something (GitPython's own framing of a failure does not)."""
    text = line.strip().strip("'").strip()
    return bool(text) and not text.startswith(("Cmd(", "cmdline:", "stderr:", "stdout:"))


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            with contextlib.suppress(FileNotFoundError):  # git renames temp files as it goes
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total
