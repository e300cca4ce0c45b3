"""What the agent is told: the traceback, the repo frames with their code (the crash site's whole function when
short) and the local variables the crash report carried, the lines test coverage points to with a few lines
around each, and how the crash reproduces; and the briefing the loop's notes repeat from it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from patcher.agent import prompts
from patcher.agent.nudges import Briefing
from patcher.agent.snippets import Excerpts
from patcher.intake import ParsedTraceback, innermost_repo_frames
from patcher.repair import Suspect
from patcher.verify import Job

MAX_TRACEBACK_CHARS = 12_000
CONTEXT_LINES = 3
SUSPECT_LINES = 2
MAX_FRAMES = 6
MAX_SUSPECTS = 5
CODE_SHARE = 6
"""The code excerpts take at most 1/CODE_SHARE of the context budget (the task is pinned: never trimmed)."""
MAX_CODE_CHARS = 12_000
FAILING_TAIL_LINES = 15
MAX_LOCALS = 16
"""Local variables shown per frame (a crash report's, e.g. from crash intake)."""


def reproduction_command(parsed: ParsedTraceback, test_command: str | None, repo_files: list[str]) -> str | None:
    """--test, else the failing test a pytest traceback names (if its file is in the repo), else the last one a
    unittest report names (`mod.Case.test_x`, its module a repo file): run by Django's `manage.py test` when
    the repository has one at its root, else by `python -m unittest`; else None."""
    if test_command:
        return test_command
    files = set(repo_files)
    for node in parsed.failing_tests:
        if node.split("::", 1)[0] in files:
            return f"python -m pytest -q {shlex.quote(node)}"
    for test in reversed([t for t in parsed.failing_tests if "::" not in t]):
        parts = test.split(".")
        modules = ("/".join(parts[:n]) for n in range(1, len(parts)))
        if any(f"{m}.py" in files or f"{m}/__init__.py" in files for m in modules):
            runner = "python manage.py test" if "manage.py" in files else "python -m unittest"
            return f"{runner} {shlex.quote(test)}"
    return None


def task_text(job: Job, suspects: Sequence[Suspect] = (), context_tokens: int = 48_000,
              redact: Callable[[str], str] = lambda s: s) -> str:
    """The agent's task; `suspects` (the coverage ranking, best first) are shown with their scores. Code is
    taken crash site first, then suspects by rank, then the outer frames, while the budget lasts."""
    assert job.parsed is not None
    parsed, traceback = job.parsed, job.traceback
    frames = innermost_repo_frames(parsed)[:MAX_FRAMES]
    code = Excerpts(job.staged.path, min(MAX_CODE_CHARS, context_tokens * 4 // CODE_SHARE), redact)
    crash = code.around(frames[0].repo_path or "", frames[0].line, CONTEXT_LINES, whole_function=True) \
        if frames else None
    ranked = [{"path": x.path, "line": x.line, "score": f"{x.score:.2f}", "code": code.line(x.path, x.line),
               "context": code.around(x.path, x.line, SUSPECT_LINES)} for x in suspects[:MAX_SUSPECTS]]
    shown = [{"path": f.repo_path, "line": f.line, "function": f.function or "?",
              "context": crash if i == 0 else code.around(f.repo_path or "", f.line, CONTEXT_LINES),
              "locals": [(name, redact(value)) for name, value in f.locals[:MAX_LOCALS]]}
             for i, f in enumerate(frames)]
    exc = parsed.exception
    tb = traceback if len(traceback) <= MAX_TRACEBACK_CHARS else "[…]\n" + traceback[-MAX_TRACEBACK_CHARS:]
    return prompts.render("task", traceback=tb.strip(), exception=f"{exc.type}: {exc.message}" if exc else None,
                          frames=list(reversed(shown)), test_command=job.repro, suspects=ranked)


def briefing(job: Job, suspects: Sequence[Suspect] = (), redact: Callable[[str], str] = lambda s: s) -> Briefing:
    """What the notes before a give-up repeat: the top suspect lines (the crash site's when coverage ranked
    none), the end of the reproduction's failing output on the base, and where each frame's function is."""
    code = Excerpts(job.staged.path, 0, redact)
    frames = innermost_repo_frames(job.parsed)[:MAX_FRAMES] if job.parsed else []
    places = [(x.path, x.line) for x in suspects[:3]] or [(f.repo_path or "", f.line) for f in frames[:2]]
    lines = list(dict.fromkeys(f"{path}:{line}: {code.line(path, line)}" for path, line in places if path))
    repro = job.baseline.repro if job.baseline else None
    tail = "\n".join(repro.output_tail.strip().splitlines()[-FAILING_TAIL_LINES:]) if repro else ""
    return Briefing(suspects=lines, failing=redact(tail), test_command=job.repro,
                    functions={f.function: f.repo_path for f in frames if f.function and f.repo_path})
