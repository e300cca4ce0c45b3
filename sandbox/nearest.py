"""The lines of a file nearest to an edit_file `old_text` that does not match: small models retype code
with other quotes, spacing or indentation, and the exact text they should have copied is the useful answer."""

from __future__ import annotations

MIN_RATIO = 0.6
MAX_LINES = 5000
"""A longer file gets no suggestion: the scan is one comparison per window of lines."""


def nearest(text: str, wanted: str) -> tuple[int, str] | None:
    """(first line number, the lines) of the window of `text` most like `wanted`, or None below MIN_RATIO."""
    from difflib import SequenceMatcher  # only on a miss: the tool server's start-up imports stay few

    lines = text.splitlines()
    size = max(1, len(wanted.strip("\n").splitlines()))
    if len(lines) > MAX_LINES or not wanted.strip():
        return None
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted.strip())
    best: tuple[float, int] = (0.0, 0)
    for start in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(lines[start:start + size]).strip())
        if matcher.real_quick_ratio() > best[0] and matcher.quick_ratio() > best[0]:
            best = max(best, (matcher.ratio(), start))
    ratio, start = best
    if ratio < MIN_RATIO:
        return None
    return start + 1, "\n".join(lines[start:start + size])


def hint(text: str, wanted: str) -> str:
    """The sentence edit_file adds to its not-found error: the nearest lines, numbered, or nothing."""
    got = nearest(text, wanted)
    if got is None:
        return ""
    first, block = got
    numbered = "\n".join(f"{first + n}\t{line}" for n, line in enumerate(block.splitlines()))
    return (f"\nthe nearest text is at line {first}; copy it exactly as old_text (quotes, spaces and "
            f"indentation as here, without the line numbers):\n{numbered}")
