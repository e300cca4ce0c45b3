"""Notes a small model gets at most once each, while it has changed no file yet.

    give_up before any edit        -> not accepted once: answered with what it has learnt (its reason, the
                                      failing test's last lines), the top suspect lines, and a request to make
                                      the smallest edit it believes in; a second give_up ends the run
    prose with a corrected function -> one note saying how to apply it with edit_file (nothing is applied
                                      from text), instead of ending the run as finished
    any other finish before any edit -> answered like a give_up, and sharing its one use: small models write
                                      "I give up because..." as prose and end the turn, so the honest exit
                                      must not be easier spelled in text than as the tool call

Both follow from the run's own history (tool names, errors, outputs), so a replay gives them again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from patcher.agent import prompts

EDIT_TOOLS = ("write_file", "edit_file")
TAIL_LINES = 15
_BLOCK = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.S | re.I)


@dataclass(frozen=True)
class Briefing:
    """What the task text showed, for the notes that repeat it."""

    suspects: list[str] = field(default_factory=list)
    """`path:line: code` of the top-ranked lines (the crash site's when coverage ranked none), best first."""
    failing: str = ""
    """The last lines of the reproduction's failing output on the base."""
    test_command: str | None = None
    """The command that reproduces the crash, if one does."""
    functions: dict[str, str] = field(default_factory=dict)
    """Function name -> repo path, for the traceback's repository frames."""


@dataclass
class Nudges:
    briefing: Briefing = field(default_factory=Briefing)
    edited: bool = False
    """Whether a write_file or edit_file has succeeded in this run."""
    given: set[str] = field(default_factory=set)
    last_failure: str = ""
    """The last lines of the agent's latest run_test that did not pass."""

    def observe(self, tool: str, is_error: bool, text: str) -> None:
        if tool in EDIT_TOOLS and not is_error:
            self.edited = True
        if tool == "run_test":
            passed = not is_error and text.startswith("exit code 0\n")
            self.last_failure = "" if passed else "\n".join(text.strip().splitlines()[-TAIL_LINES:])

    def give_up(self, reason: str, finished: bool = False) -> str | None:
        """The note that answers a give_up (or, `finished`, a reply that ended the turn in prose) instead of
        ending the run; None: the ending stands. One such note per run, whichever way the agent tried to end."""
        if self.edited or "give_up" in self.given:
            return None
        self.given.add("give_up")
        b = self.briefing
        return prompts.render("give_up_nudge", reason=_short(reason), finished=finished,
                              failing=self.last_failure or b.failing, suspects=b.suspects, test_command=b.test_command)

    def finished(self, content: str | None) -> tuple[str, str | None]:
        """(kind, note) for a reply that ended the turn with no call; note None: the run ends finished."""
        if note := self.prose_code(content):
            return "prose_code", note
        return "finished", self.give_up(content or "", finished=True)

    def prose_code(self, content: str | None) -> str | None:
        """The note for a reply that ends with a corrected function in a code block but changed no file."""
        if self.edited or "prose_code" in self.given or not (names := defined_functions(content or "")):
            return None
        self.given.add("prose_code")
        paths = {n: self.briefing.functions[n] for n in names if n in self.briefing.functions}
        return prompts.render("prose_code", names=names, paths=paths, test_command=self.briefing.test_command)


def _short(text: str, limit: int = 600) -> str:
    """The agent's own words, cut to a few lines: the note repeats them, it does not re-send a whole essay."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def defined_functions(text: str) -> list[str]:
    """Names of the functions that code blocks in `text` define (blocks that do not parse count for nothing)."""
    names: list[str] = []
    for block in _BLOCK.findall(text):
        try:
            tree = ast.parse(block)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        names += [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return list(dict.fromkeys(names))
