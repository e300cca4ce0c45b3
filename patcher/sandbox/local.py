"""The same tool server as a local subprocess on a temp copy: fast tests of tools, no isolation at all."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from patcher.config import SandboxConfig, allowlist_of
from patcher.errors import SandboxError
from patcher.intake import StagedRepo
from patcher.sandbox.base import deadline_for
from patcher.sandbox.channel import Channel
from sandbox.protocol import Request, ToolResult

LOCAL_FLAGS = ("-S", "-P")
"""The host's Python (3.11+) runs the local server: no site, and no sys.path[0] (the working directory)."""


class LocalSandbox:
    """Runs `python -m sandbox.server` on a copy of the staged repo. For tests and demos only."""

    def __init__(self, staged: StagedRepo, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.base_commit = staged.base_commit
        self.allowlist = allowlist_of(self.config)
        self._dir = Path(tempfile.mkdtemp(prefix="patcher-local-"))
        self.repo = self._dir / "repo"
        shutil.copytree(staged.path, self.repo, symlinks=True)
        reports = self._dir / "reports"
        self.report_dir = str(reports)
        cmd = [sys.executable, *LOCAL_FLAGS, "-m", "sandbox.server", "--repo", str(self.repo),
               "--base", self.base_commit, "--report-dir", str(reports), "--sweep", "group"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self._proc.stdin and self._proc.stdout
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        self._channel = Channel(self._send, self._recv, self.config.backstop_s)
        try:
            self._channel.hello(self.config.allowlist, timeout_s=30)
        except BaseException:
            self.close()
            raise

    def _send(self, data: bytes) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except OSError as e:  # killed before the call went out (a stopped side): as a Docker box says it
            raise SandboxError(f"the tool server is gone: {e}") from e

    def _recv(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._stdout], [], [], timeout)
        if not ready:
            raise TimeoutError
        return os.read(self._stdout.fileno(), 65536)

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult:
        return self._channel.call(request, deadline_s or deadline_for(self.config, request))

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for f in (self._stdin, self._stdout):
            f.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
