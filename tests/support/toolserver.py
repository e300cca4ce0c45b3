"""A host-side speaker of the tool server's protocol (sandbox/server.py), for the tests that run it directly."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from sandbox.protocol import ToolResult, build_request, decode_result, encode_request

ROOT = Path(__file__).resolve().parents[2]
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


class Client:
    """A host-side speaker of the protocol, enough for tests."""

    def __init__(self, repo: Path, base: str, report_dir: Path, allow: list[list[str]] | None = None,
                 sweep: str = "group", python: str = sys.executable, user: int | None = None,
                 root: Path = ROOT) -> None:
        self.repo, self.key = repo, os.urandom(32)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
               "PYTHONPATH": str(root)}
        self.proc = subprocess.Popen(
            [python, "-m", "sandbox.server", "--repo", str(repo), "--base", base,
             "--report-dir", str(report_dir), "--sweep", sweep],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=root, env=env, user=user)
        self.next_id = 0
        self.send_line(json.dumps({"hello": {"key": self.key.hex(), "allow": allow or []}}).encode() + b"\n")
        call_id, self.ready = decode_result(self.read_line(), self.key)
        assert (call_id, self.ready.output) == (0, "ready")

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 30.0) -> bytes:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "the server did not answer in time"
        return self.proc.stdout.readline()

    def call(self, tool: str, deadline_s: float = 30.0, **args: object) -> ToolResult:
        return self.request(tool, args, deadline_s)

    def request(self, tool: str, args: dict[str, object], deadline_s: float = 30.0) -> ToolResult:
        self.next_id += 1
        self.send_line(encode_request(self.next_id, build_request(tool, args), deadline_s))
        call_id, result = decode_result(self.read_line(deadline_s + 30), self.key)
        assert call_id == self.next_id
        assert result.output, "a result never has an empty output"
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
