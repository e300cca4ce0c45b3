"""What a job needs of a box: the Sandbox protocol, the box factory (OpenBox) and the calls every caller makes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from patcher.config import SandboxConfig
from patcher.errors import SandboxError
from patcher.intake import StagedRepo
from sandbox.protocol import GitDiffRequest, JudgeRequest, Request, RunTestRequest, ToolResult


class Sandbox(Protocol):
    base_commit: str
    allowlist: tuple[tuple[str, ...], ...]
    """The run_test argv prefixes this box runs (default list + configured extras); the box enforces them."""
    report_dir: str
    """Where test reports are written inside the box."""

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult: ...

    def kill(self) -> None:
        """Stop at once, no grace (cancel, a call that outlived its clock): calls blocked on it fail."""
        ...

    def close(self) -> None: ...


OpenBox = Callable[[StagedRepo], AbstractContextManager[Sandbox]]
"""The box factory: a fresh box over a staged repo, closed when the `with` ends."""


def diff_of(box: Sandbox) -> str:
    """The agent's changes vs the base, computed inside the box with git's helpers disabled."""
    result = box.call(GitDiffRequest())
    if result.is_error:
        raise SandboxError(f"could not compute the diff: {result.output}")
    return str(result.data.get("diff", ""))


def deadline_for(config: SandboxConfig, request: Request) -> float:
    return config.test_timeout_s if isinstance(request, RunTestRequest | JudgeRequest) else config.call_timeout_s
