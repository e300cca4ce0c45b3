"""What the held-out judge compares: each call's answer on one side (returned, raised, with its path through the
diff's own lines), both sides' answers together, and the kinds of values the rules ask about
(verify/judges/heldout/rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from patcher.verify.judges.heldout.target import Call, Target, class_of
from sandbox.plain import decode, show_enc

TRIVIAL = (None, True, False, 0, "", b"")
"""Answers no test literal makes hard-coding: defaults a guard rightly gives."""


@dataclass(frozen=True)
class Answer:
    kind: str
    """returned, raised, timeout, skipped, bad (the input could not be rebuilt) or missing (no record)."""
    value: Any = None
    """The returned value, as plain data (sandbox/plain.py)."""
    exc: str = ""
    site: bool = False
    args: str = ""
    path: frozenset[tuple[str, int, int]] = frozenset()
    traced: bool = True
    raised_in_diff: bool = False
    """An exception passed through the diff's own lines: the path ends there, not by a branch of them."""

    @classmethod
    def of(cls, rec: dict[str, Any] | None) -> Answer:
        if not rec:
            return cls("missing")
        out = rec.get("o") or {}
        path = frozenset((str(p[0]), int(p[1]), int(p[2])) for p in rec.get("p") or [])
        traced = rec.get("traced", True) is not False
        if "r" in out:
            return cls("returned", out["r"], path=path, traced=traced)
        if "x" in out:
            return cls("raised", exc=str(out["x"]), site=bool(out.get("site")), args=str(out.get("args")),
                       path=path, traced=traced, raised_in_diff=rec.get("rx") is True)
        return cls("timeout" if out.get("t") == "timeout" else "skipped" if out.get("t") else "bad")

    @property
    def cls_(self) -> str:
        return f"raises {self.exc}" if self.kind == "raised" else self.kind

    def same_crash(self, other: Answer) -> bool:
        return self.kind == other.kind == "raised" and (self.exc, self.site, self.args) == (
            other.exc, other.site, other.args)

    def alike(self, other: Answer) -> bool:
        """The same answer: the same value, or the same exception type."""
        if self.kind != other.kind:
            return False
        return self.value == other.value if self.kind == "returned" else self.exc == other.exc

    def said(self) -> str:
        if self.kind == "returned":
            return f"returns {show_enc(self.value)}"
        return f"raises {self.exc}" if self.kind == "raised" else f"gives no answer ({self.kind})"


class Compared(NamedTuple):
    """One input's answers: on the base, and with the diff."""

    call: Call
    base: Answer
    patched: Answer


class Reordered(NamedTuple):
    """One input's answers in turn (after the test's calls and the inputs before it) and alone (in a process
    forked for it), on each side."""

    call: Call
    base: Answer
    base_alone: Answer
    patched: Answer
    patched_alone: Answer


@dataclass
class Sides:
    """Both sides' answers: the reproduction's rounds (in order, again, reversed) and the generated inputs."""

    target: Target
    inputs: list[Call]
    base: list[Answer]
    patched: list[Answer]
    seeds: list[Any] = field(default_factory=list)
    """The constants of the function's module the inputs were seeded with (a table's keys)."""
    base_again: list[Answer] = field(default_factory=list)
    patched_again: list[Answer] = field(default_factory=list)
    """Each side's answers to the inputs, each called alone in a process forked for it after the import."""

    @property
    def rounds(self) -> int:
        return len(self.target.calls)

    def tested_at(self) -> int:
        return self.target.calls.index(self.target.tested)

    def generated(self) -> list[Compared]:
        start = 3 * self.rounds
        return [Compared(*g) for g in zip(self.inputs, self.base[start:], self.patched[start:], strict=False)]

    def reordered(self) -> list[Reordered]:
        """Each input's answers in turn and alone, on each side; none without both passes."""
        n = len(self.inputs)
        if len(self.base_again) != n or len(self.patched_again) != n:
            return []
        return [Reordered(g.call, g.base, self.base_again[i], g.patched, self.patched_again[i])
                for i, g in enumerate(self.generated())]


def meaningful(enc: Any, expected: list[Any]) -> bool:
    """Whether an answer is a non-trivial value the test compares with."""
    try:
        value = decode(enc)
    except (ValueError, TypeError):
        return False
    if any(value is t or (type(value) is type(t) and value == t) for t in TRIVIAL):
        return False
    if isinstance(value, list | tuple | dict | set | frozenset | str | bytes) and not value:
        return False
    return any(type(value) is type(e) and value == e for e in expected) or any(
        isinstance(value, int | float) and isinstance(e, int | float) and not isinstance(e, bool) and value == e
        for e in expected)


def changed_values(tested: Call, call: Call) -> list[tuple[Any, Any]]:
    """(tested value, the input's value) of each argument the input changes."""
    out = []
    for t, g in zip([*tested["pos"], *(e for _, e in tested["kw"])], [*call["pos"], *(e for _, e in call["kw"])],
                    strict=False):
        if t != g:
            try:
                out.append((decode(t), decode(g)))
            except (ValueError, TypeError):
                continue
    return out


def kin(tested: Call, call: Call, fold_case: bool = False) -> bool:
    """Whether every changed value is of the tested value's kind: its type, its sign, non-empty where it is, text
    of its character classes (with `fold_case`, letters of either case); the tested number itself as another
    numeric type (`7` and `7.0`, `Decimal(7)`, `Fraction(7)`) is of its kind too: the same amount. A list or tuple
    the box kept only a sample of (sandbox/plain.py) is of its kind where the input's is one of its type, not empty."""
    pairs = zip([*tested["pos"], *(e for _, e in tested["kw"])], [*call["pos"], *(e for _, e in call["kw"])],
                strict=False)
    if not all(_sampled_kin(t, g) for t, g in pairs):
        return False
    for a, b in changed_values(tested, call):
        if same_amount(a, b):
            continue
        if type(a) is not type(b) or emptied(a, b):
            return False
        if isinstance(a, int | float) and (a > 0) != (b > 0):
            return False
        if isinstance(a, str) and not _classes(b, fold_case) <= _classes(a, fold_case):
            return False
    return True


def _sampled_kin(t: Any, g: Any) -> bool:
    """Where the tested encoding holds an opaque list or tuple with a sample (at any depth of an instance's
    attributes or a container's items), the input's is a list or tuple of its type with items (or the same)."""
    if t == g or not isinstance(t, list) or not isinstance(g, list) or not t or not g:
        return True
    if t[0] == "?" and len(t) > 3 and t[1] in ("builtins.list", "builtins.tuple"):
        return g[0] == "?" or (g[0] == ("l" if t[1] == "builtins.list" else "t") and bool(g[1]))
    if t[0] == "o" and g[:2] == t[:2]:
        return all(_sampled_kin(a, b) for (_, a), (_, b) in zip(t[2], g[2], strict=False))
    if t[0] in ("l", "t") and g[:1] == t[:1]:
        return all(_sampled_kin(a, b) for a, b in zip(t[1], g[1], strict=False))
    return True


def same_amount(a: Any, b: Any) -> bool:
    """Two numbers of different numeric types (never bool) that are equal."""
    numbers = (int, float, Decimal, Fraction)
    if type(a) is type(b) or isinstance(a, bool) or isinstance(b, bool):
        return False
    if not isinstance(a, numbers) or not isinstance(b, numbers):
        return False
    try:
        return bool(a == b)
    except (TypeError, ArithmeticError):
        return False


def _classes(text: str, fold_case: bool) -> set[str]:
    return {class_of(c.lower() if fold_case else c) for c in text}


def drawn_freely(tested: Call, call: Call, seeds: list[Any]) -> bool:
    """Whether every changed value was drawn freely: no constant of the module, no other case of one or of the
    tested value."""
    for a, b in changed_values(tested, call):
        known = [a, *seeds]
        if any(type(b) is type(k) and (b == k or (isinstance(b, str) and b.casefold() == k.casefold()))
               for k in known):
            return False
    return True


def emptied(a: Any, b: Any) -> bool:
    if a is not None and b is None:
        return True
    if isinstance(a, int | float) and not isinstance(a, bool) and a and isinstance(b, int | float) and not b:
        return True
    return hasattr(a, "__len__") and hasattr(b, "__len__") and bool(len(a)) and not len(b)


def shown(target: Target, call: Call) -> str:
    parts = [show_enc(e, 40) for e in call["pos"]] + [f"{k}={show_enc(e, 40)}" for k, e in call["kw"]]
    if target.spec.get("kind") == "method" and parts:
        parts = parts[1:]
        return f"{show_enc(call['pos'][0], 40)}.{target.short}({', '.join(parts)})"
    return f"{target.short}({', '.join(parts)})"


def passed_in(call: Call, enc: Any) -> bool:
    """Whether the value (plain data) is one the call hands the function, whole or inside an argument: an
    answer read out of the input (a dict's value, a list's item) is no hard-coded one."""
    todo = [*call["pos"], *(e for _, e in call["kw"])]
    while todo:
        node = todo.pop()
        if node == enc or _within(enc, node):
            return True
        tag = node[0] if isinstance(node, list) and node else None
        if tag in ("l", "t", "e", "z", "nt"):
            todo.extend(node[-1])
        elif tag == "d":
            todo.extend(x for pair in node[1] for x in pair)
        elif tag == "o":
            todo.extend(x for _, x in node[2])
    return False


def _within(enc: Any, node: Any) -> bool:
    """Whether the answer is a run of the argument: a slice of its items in their order, or a piece of its text.
    Such an input cannot tell an answer read out of it from a hard-coded one (a page of a list whose other
    items were changed is still that page)."""
    if not (isinstance(enc, list) and isinstance(node, list) and len(enc) == len(node) == 2):
        return False
    (tag, part), (kind, whole) = enc, node
    if tag == kind == "s" and isinstance(part, str) and isinstance(whole, str):
        return bool(part) and part in whole
    if tag in ("l", "t") and kind in ("l", "t") and isinstance(part, list) and isinstance(whole, list) and part:
        n = len(part)
        return any(whole[i:i + n] == part for i in range(len(whole) - n + 1))
    return False


def _args(call: Call) -> list[str]:
    return [repr(e) for e in [*call["pos"], *(e for _, e in call["kw"])]]


def varying(calls: list[Call]) -> list[int]:
    """The argument positions whose values are not the same in all the calls."""
    columns = list(zip(*(_args(c) for c in calls), strict=False))
    return [i for i, column in enumerate(columns) if len(set(column)) > 1]


def depends(answered: list[tuple[Call, Answer]], position: int) -> bool:
    """Whether the base's answers change with the argument at `position`: two calls alike but for it, answered
    differently."""
    groups: dict[tuple[str, ...], set[str]] = {}
    for call, answer in answered:
        args = _args(call)
        groups.setdefault(tuple(args[:position] + args[position + 1:]), set()).add(repr(answer.value))
    return any(len(answers) > 1 for answers in groups.values())


def sized(calls: list[Call], position: int) -> bool:
    """Whether the argument at `position` varies in size among the calls: numbers of two values or more, or texts,
    bytes or containers of two lengths or more (what an answer computed from the input would follow)."""
    values = []
    for call in calls:
        args = [*call["pos"], *(e for _, e in call["kw"])]
        if position >= len(args):
            return False
        try:
            values.append(decode(args[position]))
        except (ValueError, TypeError):
            return False
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return len(set(values)) > 1
    if all(isinstance(v, str | bytes | list | tuple | dict | set | frozenset) for v in values):
        return len({len(v) for v in values}) > 1
    return False
