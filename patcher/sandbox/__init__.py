"""The box a job works in: a Protocol and two implementations (Docker for jobs, local for fast tests).

Lifecycle (start, close) lives in each class; operations are one typed request -> one ToolResult.
"""

from __future__ import annotations

from typing import Protocol

from patcher.config import SandboxConfig
from patcher.errors import SandboxError
from sandbox.protocol import GitDiffRequest, Request, RunTestRequest, ToolResult


class Sandbox(Protocol):
    base_commit: str

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult: ...

    def close(self) -> None: ...


def diff_of(box: Sandbox) -> str:
    """The agent's changes vs the base, computed inside the box with git's helpers disabled."""
    result = box.call(GitDiffRequest())
    if result.is_error:
        raise SandboxError(f"could not compute the diff: {result.output}")
    return str(result.data.get("diff", ""))


def run_test(box: Sandbox, command: str, deadline_s: float | None = None) -> ToolResult:
    return box.call(RunTestRequest(command=command), deadline_s)


def deadline_for(config: SandboxConfig, request: Request) -> float:
    return config.test_timeout_s if isinstance(request, RunTestRequest) else config.call_timeout_s
