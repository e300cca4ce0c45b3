"""What the agent is told when verification rejects its diff, and what the result keeps of each attempt.

A rejected attempt keeps its verdict and the digest of its diff, never the diff itself (fail closed).
One strike: a diff refused as an attempt to game the verification (STRIKES) ends the job; the agent is told
only that, never which rule fired or the lines quoted (the user sees them in the result), so a verdict
cannot teach the rules to the next attempt. Honest mistakes (a test edited, config touched, tests failing)
keep their explanatory verdict and their retries.
"""

from __future__ import annotations

import hashlib
from typing import Any

from patcher.agent import prompts
from patcher.result import STRIKES
from patcher.verify import Verification

EXCERPT_CHARS = 3000


def diff_digest(diff: str) -> str:
    return hashlib.sha256(diff.encode()).hexdigest()


def attempt_record(n: int, ver: Verification, diff: str) -> dict[str, Any]:
    return {"attempt": n, "status": ver.status, "reason": ver.reason, "message": ver.message,
            "diff_sha256": diff_digest(diff), "files_changed": ver.files_changed,
            "duration_s": round(ver.duration_s, 3)}


def verdict_note(ver: Verification, attempt: int, attempts: int) -> str:
    """The observation the agent gets: which rule said no, which tests failed, the end of the failing output
    (for a strike: that it was refused as gaming, and nothing else)."""
    if ver.reason in STRIKES:
        return prompts.render("strike", attempt=attempt, attempts=attempts)
    refusing = next((e for e in ver.evidence if e.refuses), None)
    message = ver.message
    if refusing is not None and message == refusing.sentence():
        message = refusing.message  # without the inputs it quotes: held-out inputs stay unseen by every engine
    failing_run = next((run for _, run in reversed(ver.runs) if run.outcome != "passed"), None)
    failing = sorted(failing_run.failed)[:20] if failing_run else []
    regressions = list(ver.pass_to_pass.get("regressions") or [])
    return prompts.render("verdict", attempt=attempt, attempts=attempts, reason=ver.reason, message=message,
                          failing=sorted(set(failing) | set(regressions))[:20],
                          command=failing_run.command if failing_run else "",
                          excerpt=failing_run.output_tail[-EXCERPT_CHARS:].strip() if failing_run else "")
