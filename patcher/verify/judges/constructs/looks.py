"""How the diff looks, as review hints (judge `constructs`): what the rules by construct
(verify/judges/constructs/rules.py), the
spelling rules (verify/judges/constructs/probes.py) and the literal and module-state hints
(verify/judges/constructs/hints.py) find, one Evidence per flagged line of the diff with the line quoted. They never
refuse.

Why never: real code is full of what they flag. An upstream line of a real library reads a bound method's
`__self__` (computed_name); a command-line entry point falls back to `sys.argv[1:]` (by spelling, a probe of
the harness); the natural fix for "'<' not supported" adds `__eq__` and `__lt__` (overload). And a cheat can be
spelled with none of them. What the diff does is the behavioural judges' (held_out, context, runtime,
values), which refuse on what they observe.

Together: a hint takes part in a refusal only through a behavioural judge's refusing evidence, which is the
verdict by itself (its reason, its quote); `as_evidence()` marks each hint that evidence implicates (it names
the hint's line, or a line of the function around it: `path:line` in its quote or message), so the reviewer
sees where how the code looks and what it did meet. A hint on the line of a behavioural *hint* stays a hint:
that judge chose not to refuse what it saw (a compatibility shim that writes a standard-library attribute is
flagged by both, and is a real fix), and how the line looks adds nothing it did not see.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from patcher.verify.judges.constructs.hints import diff_hints
from patcher.verify.judges.constructs.probes import Probe, find_probes
from patcher.verify.judges.constructs.rules import find_constructs
from patcher.verify.policy.sources import parse
from patcher.verify.policy.treediff import Change
from patcher.verify.records import Evidence

BEHAVIOURAL = ("held_out", "context", "runtime", "values")
"""The judges whose evidence is what the diff does (issue 34, parts 1-3)."""
MAX_LINES = 20
"""Flagged lines shown one by one; the rest are counted in one more hint."""
_PLACE = re.compile(r"([\w./+-]+\.pyw?):(\d+)")


@dataclass(frozen=True)
class Hint:
    """One flagged line of the diff: what the rules say of it, and the function around it."""

    path: str
    line: int
    text: str
    rules: tuple[Probe, ...]
    function: tuple[int, int] | None = None
    """First and last line of the innermost function around the line (None: module level)."""

    def meets(self, path: str, line: int) -> str | None:
        """"line" or "function" when `path:line` is this line or in its function; None when it is neither."""
        if path != self.path and not path.endswith("/" + self.path):
            return None
        if line == self.line:
            return "line"
        return "function" if self.function and self.function[0] <= line <= self.function[1] else None

    def evidence(self, by: Evidence | None = None, where: str | None = None) -> Evidence:
        kind = self.rules[0].kind
        said = "; ".join(dict.fromkeys(r.rule if r.kind == kind else f"{r.kind}: {r.rule}" for r in self.rules))
        if by is not None:
            seen = "refused" if by.refuses else "flagged"
            said += f" (on the {where} where the {by.judge} judge {seen} what the diff does: {by.kind})"
        return Evidence("constructs", kind, said, quote=f"{self.path}:{self.line}: {self.text.strip()[:160]}")


def construct_hints(changes: list[Change], repo: Path, files: list[str], repro: str | None) -> list[Hint]:
    """Every added line a rule flags, in file and line order, its findings in the rules' order."""
    by_line: dict[tuple[str, int], list[Probe]] = {}
    for found in [*find_constructs(changes), *find_probes(changes), *diff_hints(changes, repo, files, repro)]:
        by_line.setdefault((found.path, found.line), []).append(found)
    functions = {c.path: _functions(c.new_text) for c in changes if c.path.endswith((".py", ".pyw"))}
    return [Hint(path, line, rules[0].text, tuple(dict.fromkeys(rules)), _innermost(functions.get(path, []), line))
            for (path, line), rules in sorted(by_line.items())]


def as_evidence(hints: list[Hint], judged: list[Evidence]) -> list[Evidence]:
    """The hints as the `constructs` judge's evidence (none refuses), each marked where the behavioural judges'
    evidence in `judged` implicates it (a refusal before a hint); lines past MAX_LINES counted in one more."""
    places = [(e, path, int(line)) for e in sorted(judged, key=lambda e: not e.refuses) if e.judge in BEHAVIOURAL
              for path, line in _PLACE.findall(f"{e.quote}\n{e.message}")]
    out = []
    for hint in hints[:MAX_LINES]:
        met = next(((e, where) for e, path, line in places if (where := hint.meets(path, line))), None)
        out.append(hint.evidence(*met) if met else hint.evidence())
    rest = hints[MAX_LINES:]
    if rest:
        out.append(Evidence("constructs", "more", f"{len(rest)} more line(s) the rules by construct flag",
                            quote=", ".join(f"{h.path}:{h.line}" for h in rest[:20])))
    return out


def _functions(text: str | None) -> list[tuple[int, int]]:
    tree = parse(text)
    if tree is None:
        return []
    return [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _innermost(spans: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    around = [s for s in spans if s[0] <= line <= s[1]]
    return min(around, key=lambda s: s[1] - s[0]) if around else None
