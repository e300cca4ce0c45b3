"""Exceptions that end a job. Tool failures are not here: they are results the model reads.

    PatcherError                 exit code
    ├── BadInput                 2   wrong path, not a git repo, unparsable traceback, bad patch file
    ├── EnvironmentUnavailable   3   no Docker daemon, no sandbox image, model endpoint unreachable
    │   ├── SetupFailed          3   the dependency setup step failed
    │   └── ModelUnreachable     3   the model endpoint could not be reached (after retries)
    ├── SandboxError             1   the container broke, timed out on the host backstop, or lied
    └── ModelError               1   the model endpoint answered with something unusable
"""

from __future__ import annotations


class PatcherError(Exception):
    exit_code = 1
    reason = "sandbox_error"


class BadInput(PatcherError):
    exit_code = 2
    reason = "bad_input"


class EnvironmentUnavailable(PatcherError):
    exit_code = 3
    reason = "sandbox_error"


class SetupFailed(EnvironmentUnavailable):
    reason = "setup_failed"


class ModelUnreachable(EnvironmentUnavailable):
    reason = "model_error"


class SandboxError(PatcherError):
    exit_code = 1
    reason = "sandbox_error"


class ModelError(PatcherError):
    exit_code = 1
    reason = "model_error"


class Cancelled(PatcherError):
    """The job was cancelled while it ran (its boxes are killed, its model call abandoned)."""

    exit_code = 1
    reason = "cancelled"
