"""What the agent is told: the traceback, the repo frames' source lines, the lines test coverage points to,
and how the crash reproduces."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from patcher.agent import prompts
from patcher.intake import ParsedTraceback, innermost_repo_frames
from patcher.repair import Suspect
from patcher.verify import Job

MAX_TRACEBACK_CHARS = 12_000
CONTEXT_LINES = 3
MAX_FRAMES = 6
MAX_SUSPECTS = 5


def reproduction_command(parsed: ParsedTraceback, test_command: str | None, repo_files: list[str]) -> str | None:
    """--test, else the failing test a pytest traceback names (if its file is in the repo), else None."""
    if test_command:
        return test_command
    files = set(repo_files)
    for node in parsed.failing_tests:
        if node.split("::", 1)[0] in files:
            return f"python -m pytest -q {shlex.quote(node)}"
    return None


def source_context(repo: Path, rel: str, line: int, around: int = CONTEXT_LINES) -> str | None:
    """Lines around `line` of a staged file; never follows a symlink out of the staging copy."""
    path = repo / rel
    try:
        if path.is_symlink() or not os.path.realpath(path).startswith(os.path.realpath(repo) + os.sep):
            return None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return "\n".join(f"{'>' if n == line else ' '}{n:>5}  {lines[n - 1]}" for n in range(lo, hi + 1)) or None


def task_text(job: Job, suspects: Sequence[Suspect] = ()) -> str:
    """The agent's task; `suspects` (the coverage ranking, best first) are shown with their scores."""
    assert job.parsed is not None
    parsed, traceback, repo, repro = job.parsed, job.traceback, job.staged.path, job.repro
    frames = list(reversed(innermost_repo_frames(parsed)[:MAX_FRAMES]))
    exc = parsed.exception
    tb = traceback if len(traceback) <= MAX_TRACEBACK_CHARS else "[…]\n" + traceback[-MAX_TRACEBACK_CHARS:]
    return prompts.render(
        "task", traceback=tb.strip(), exception=f"{exc.type}: {exc.message}" if exc else None,
        frames=[{"path": f.repo_path, "line": f.line, "function": f.function or "?",
                 "context": source_context(repo, f.repo_path or "", f.line)} for f in frames],
        test_command=repro,
        suspects=[{"path": x.path, "line": x.line, "score": f"{x.score:.2f}",
                   "code": re.sub(r"^.\s*\d+  ", "", source_context(repo, x.path, x.line, 0) or "").strip()}
                  for x in suspects[:MAX_SUSPECTS]])
