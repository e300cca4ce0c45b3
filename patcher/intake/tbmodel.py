"""What a crash report is read into: its frames, the exception each traceback ended in, and the chain.

Apart from the readers (traceback.py follows a report line by line, pytestreport.py reads pytest's own
parts of it) so that both build the same values, and frames.py maps them onto the repository's files
without importing a parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    source: str | None
    repo_path: str | None = None
    external: bool = True
    function_printed: bool = True
    """False when the traceback did not name the function: read from pytest's printed source, or unknown."""
    locals: tuple[tuple[str, str], ...] = ()
    """(name, value text) of the frame's local variables when the report carried them."""


@dataclass(frozen=True)
class ExceptionInfo:
    type: str
    message: str


Link = tuple[list[Frame], ExceptionInfo | None]


@dataclass(frozen=True)
class ParsedTraceback:
    frames: list[Frame]
    exception: ExceptionInfo | None
    chain: list[Link]
    failing_tests: list[str]
    kind: Literal["cpython", "pytest"]
