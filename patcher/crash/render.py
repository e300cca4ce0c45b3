"""A crash as the traceback text a job takes: CPython's own layout, so `patcher.intake.parse_traceback` reads it
and maps its frames onto the repository like any pasted traceback, with each frame's local variables in the
layout of `traceback.TracebackException(capture_locals=True)` (`    name = value` under the source line).

    Traceback (most recent call last):
      File "/srv/app/shop/pagination.py", line 12, in page
        return [items[i] for i in range(start, min(end, len(items) + 1))]
        number = 3
        size = 10
    IndexError: list index out of range
"""

from __future__ import annotations

from patcher.crash.event import Crash, CrashException

CAUSE = "The above exception was the direct cause of the following exception:"
CONTEXT = "During handling of the above exception, another exception occurred:"


def traceback_text(crash: Crash) -> str:
    """The crash as a traceback; led by `Python X.Y.Z (NAME, the crash report's runtime)` when the report says
    which Python ran it (intake reads the crash's Python from that line first)."""
    parts = [runtime_line(crash.runtime)] if crash.runtime else []
    for i, exc in enumerate(crash.chain):
        if i:
            parts.append(CAUSE if crash.chain[i - 1].cause else CONTEXT)
        parts.append(_one(exc))
    return "\n\n".join(parts) + "\n"


def runtime_line(runtime: str) -> str:
    name, _, version = runtime.partition(" ")
    return f"Python {version} ({name}, the crash report's runtime)"


def _one(exc: CrashException) -> str:
    lines = ["Traceback (most recent call last):"]
    for frame in exc.frames:
        lines.append(f'  File "{frame.path}", line {frame.lineno}, in {frame.function}')
        if frame.source is None and frame.variables:
            lines.append("    ???")  # the variables must not be read as the frame's source line
        elif frame.source is not None:
            lines.append(f"    {frame.source}")
        lines += [f"    {name} = {value}" for name, value in frame.variables]
    lines.append(f"{exc.type}: {exc.message}" if exc.message else exc.type)
    return "\n".join(lines)
