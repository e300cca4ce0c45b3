"""Exceptions that end a job. Tool failures are not here: they are results the model reads.

    PatcherError                 exit code
    ├── BadInput                 2   wrong path, not a git repo, unparsable traceback, bad patch file
    ├── EnvironmentUnavailable   3   no Docker daemon, no sandbox image, model endpoint unreachable
    │   ├── SetupFailed          3   the dependency setup step failed
    │   └── ModelUnreachable     3   the model endpoint could not be reached (after retries)
    ├── InternalError            1   a bug in patcher: anything else raised inside a command (`internal_error`)
    ├── SandboxError             1   the container broke, timed out on the host backstop, or lied
    ├── ModelError               1   the model endpoint answered with something unusable
    └── Cancelled                1   the job was cancelled while it ran
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patcher.result import Reason


class PatcherError(Exception):
    exit_code = 1
    reason: Reason = "sandbox_error"


class BadInput(PatcherError):
    exit_code = 2
    reason: Reason = "bad_input"


class EnvironmentUnavailable(PatcherError):
    exit_code = 3
    reason: Reason = "sandbox_error"


class SetupFailed(EnvironmentUnavailable):
    reason: Reason = "setup_failed"

    def __init__(self, message: str, interpreter: str | None = None, setup: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.interpreter = interpreter
        """Why the failure points at the interpreter (another Python may set the project up), or None."""
        self.setup = setup
        """What the failed setup read and ran (`provenance.setup`), when it got that far."""


class ModelUnreachable(EnvironmentUnavailable):
    reason: Reason = "model_error"


class SandboxError(PatcherError):
    pass


class ModelError(PatcherError):
    exit_code = 1
    reason: Reason = "model_error"


class InternalError(PatcherError):
    """Something patcher did not expect raised inside it: a bug of patcher's, reported with its trace."""

    reason: Reason = "internal_error"


class Cancelled(PatcherError):
    """The job was cancelled while it ran (its boxes are killed, its model call abandoned)."""

    exit_code = 1
    reason: Reason = "cancelled"
