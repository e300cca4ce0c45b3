"""What the candidate generator (repair/candidates.py) hands out: a `Candidate` fix and the `Stats` of a run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Candidate:
    path: str
    line: int
    template: str
    description: str
    diff: str
    new_text: str = field(repr=False)
    """The whole file after the fix (what `diff` makes of the file in the repo)."""
    last: bool = False
    """It flips the guard of the reported raise (suppress.guard_flipped), or returns None from a function
    whose every other return is a value that is never None (repair/noneguards.py): tried after the
    candidates on the lines that raised and fed the raise, and after every other one without a ranking."""


@dataclass
class Stats:
    """How a `candidates` run went, filled in as its iterator advances."""

    generated: int = 0
    """Candidates yielded."""
    frames: int = 0
    """Distinct repo frames (file, line) looked at."""
    sites: int = 0
    """Lines the templates ran on."""
    duplicates: int = 0
    """Fixes whose resulting file text an earlier candidate already had."""
    not_compiling: int = 0
    """Fixes whose result does not compile."""
    test_files: int = 0
    """Fixes that would edit a test file (verification refuses those)."""
    suppressing: int = 0
    """Fixes refused because they silence the reported exception (see repair/suppress.py)."""
    dead: int = 0
    """Fixes refused because they make a branch unreachable (see repair/dead.py)."""
    limit_reached: bool = False
    """Stopped at `limit`: more candidates may exist."""
    seconds: float = 0.0
    """Time spent generating, not counting the consumer's time between candidates."""
