"""The values a test compares, seen at run time (the values judge, box side).

The judge compiles each test module with its comparisons (`a == b`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`)
turned into calls of `Values.compare`, as pytest's assertion rewriting turns asserts into code that keeps the
operands; `unittest` assert methods are wrapped on the instance. Each comparison is computed once, as written.
Its operands leave on the child's pipe where they are plain data (the keeper recomputes the comparison:
`encode`), and, in the context that watches the diff, a comparison that holds is put to strangers: a value
whose `__eq__` says it equals a fresh object of a private class or a value unequal to the other operand, that
is unequal to itself, whose hash disagrees with an equality it claims, or that orders against a stranger, is
degenerate (`overload`). Where its method is the diff's (the tracer saw the diff's code run in the check, or
the method's code holds an added line, or it is no Python function at all on a class of the repository), it
refuses; else it is a hint. A library's value that equals anything (`unittest.mock.ANY`) refuses too (the host
makes it a hint where the base's run shows it as well); its other oddities are the library's nature, not
reported. Builtin values are never judged: only their own code can be degenerate.
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import ast
import contextlib
import math
import operator
import os
import random
from typing import Any, Callable

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}
_NODE_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
             ast.In: "in", ast.NotIn: "not in"}
HOOK = "@patcher_compare"
PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range)
METHOD = {"==": "__eq__", "!=": "__ne__", "in": "__eq__", "not in": "__eq__", "<": "__lt__", "<=": "__le__",
          ">": "__gt__", ">=": "__ge__"}
UNITTEST = {"assertEqual": "==", "assertEquals": "==", "assertNotEqual": "!=", "assertIn": "in",
            "assertNotIn": "not in", "assertListEqual": "==", "assertTupleEqual": "==", "assertDictEqual": "==",
            "assertSetEqual": "==", "assertSequenceEqual": "==", "assertMultiLineEqual": "==", "assertLess": "<",
            "assertLessEqual": "<=", "assertGreater": ">", "assertGreaterEqual": ">="}
MAX_RECORDS = 200
_TAGS: dict[Any, str] = {list: "L", tuple: "T", set: "S", frozenset: "F"}


class _Stranger:
    """A fresh object of a class nothing else knows: no honest value equals it or orders against it."""

    __hash__ = object.__hash__


class _Rewrite(ast.NodeTransformer):
    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        op = _NODE_OPS.get(type(node.ops[0])) if len(node.ops) == 1 else None
        if op is None:
            return node
        call = ast.Call(func=ast.Name(id=HOOK, ctx=ast.Load()),
                        args=[ast.Constant(op), ast.Constant(node.lineno), node.left, node.comparators[0]],
                        keywords=[])
        return ast.copy_location(call, node)


def rewrite(text: str, path: str) -> Any:
    """The module's code with its comparisons captured (line numbers as they were)."""
    tree = _Rewrite().visit(ast.parse(text, path))
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


class Values:
    def __init__(self, emit: Callable[[dict[str, Any]], None], judge_lines: Callable[[Any], bool] | None,
                 probe: Callable[[Callable[[], Any]], tuple[Any, bool]] | None, repo_root: str) -> None:
        """`judge_lines(code)`: whether a code object holds the diff's lines (None: do not judge values, only
        record operands); `probe(fn)`: fn's result and whether the diff's code ran in it."""
        self.emit, self.judge_lines, self.probe = emit, judge_lines, probe
        self.root = repo_root.rstrip("/") + "/"
        self.records: list[int] = [0]
        """A counter kept in place: the runtime judge watches this object, and the test's own comparisons run
        while the diff's code calls back into the test."""
        self.lines_seen: set[int] = set()
        self.found: set[tuple[type, str]] = set()

    def compare(self, op: str, line: int, left: Any, right: Any) -> Any:
        result = OPS[op](left, right)
        self.seen(op, line, left, right, result)
        return result

    def seen(self, op: str, line: int, left: Any, right: Any, result: Any) -> None:
        ok = result if isinstance(result, bool) else None
        if self.records[0] < MAX_RECORDS or line not in self.lines_seen:
            self.records[0] += 1
            self.lines_seen.add(line)
            self.emit({"k": "cmp", "line": line, "op": op, "l": encode(left), "r": encode(right), "ok": ok})
        if ok and self.judge_lines is not None:
            with contextlib.suppress(Exception):  # the judge's own check never changes the test's outcome
                self._inspect(op, line, left, right)

    def wrap(self, case: Any) -> None:
        """A unittest.TestCase instance's assert methods, as instance attributes that note their operands."""
        for name, op in UNITTEST.items():
            method = getattr(case, name, None)
            if method is not None:
                setattr(case, name, self._wrapped(method, op))

    def _wrapped(self, method: Callable[..., Any], op: str) -> Callable[..., Any]:
        def check(first: Any, second: Any, *args: Any, **kwargs: Any) -> Any:
            import sys
            line = sys._getframe(1).f_lineno
            out = method(first, second, *args, **kwargs)
            self.seen(op, line, first, second, True)
            return out
        return check

    def _inspect(self, op: str, line: int, left: Any, right: Any) -> None:
        pairs = [(left, right), (right, left)]
        if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            pairs += list(zip(left[:20], right[:20])) + list(zip(right[:20], left[:20]))
        for value, other in pairs:
            if type(value) in PLAIN or type(value).__module__ in ("builtins",) or _judge_made(value):
                continue
            why = self._degenerate(value, other, op)
            if why:
                self._report(op, line, value, why)

    def _degenerate(self, value: Any, other: Any, op: str) -> str:
        name = METHOD[op]
        stranger = _Stranger()
        if name in ("__eq__", "__ne__"):
            if _holds(lambda: value == stranger):
                return "equals a fresh object of another type"
            twin = _unlike(other)
            if twin is not None and _holds(lambda: value == twin):
                return f"equals {other!r:.40} and {twin!r:.40} alike"
            if not _holds(lambda: value == value) or _holds(lambda: value != value):
                return "is unequal to itself"
            sibling = _changed(other)
            if sibling is not None and _holds(lambda: value == sibling):
                return f"equals a {type(other).__qualname__} with every field changed"
            if _holds(lambda: value == other) and type(value) is not type(other) and _hash(value) is not None \
                    and _hash(other) is not None and _hash(value) != _hash(other):
                return f"equals {other!r:.40} but hashes differently"
            return ""
        order = OPS[op]
        if _holds(lambda: order(value, stranger)) or _holds(lambda: order(stranger, value)):
            return f"orders against a fresh object of another type ({op})"
        if op in ("<", ">") and _holds(lambda: order(value, value)):
            return f"is {op} itself"
        return ""

    def _report(self, op: str, line: int, value: Any, why: str) -> None:
        cls = type(value)
        key = (cls, why[:20])
        if key in self.found:
            return
        self.found.add(key)
        method = getattr(cls, METHOD[op], None)
        diff = self._diffs(value, method)
        if not diff and not self._repo_made(cls):
            if not why.startswith("equals a fresh object") and not why.endswith(" alike"):
                return  # a library's odd hash or order is the library's nature, not the repository's doing
            diff = True  # a library's value equal to anything (unittest.mock.ANY) handed to the test's comparison
        self.emit({"k": "obs", "judge": "values", "kind": "overload", "refuses": diff, "line": line,
                   "type": f"{cls.__module__}.{cls.__qualname__}"[:120], "method": _where(method, self.root),
                   "what": f"the compared value ({cls.__qualname__}) {why}"[:300]})

    def _diffs(self, value: Any, method: Any) -> bool:
        """Whether the degenerate comparison is the diff's doing."""
        assert self.judge_lines is not None
        if self.probe is not None:
            ran = self.probe(lambda: _holds(lambda: value == _Stranger()) or _holds(lambda: value == value))[1]
            if ran:
                return True
        code = getattr(getattr(method, "__func__", method), "__code__", None)
        if code is not None:
            return self.judge_lines(code) or not os.path.isfile(code.co_filename)
        return self._repo_made(type(value))

    def _repo_made(self, cls: type) -> bool:
        module = __import__("sys").modules.get(cls.__module__)
        return str(getattr(module, "__file__", "") or "").startswith(self.root)


def _judge_made(value: Any) -> bool:
    return type(value).__module__.startswith(("_patcher_judge", "pytest")) or type(value).__name__ == "ApproxBase"


def _holds(check: Callable[[], Any]) -> bool:
    try:
        return bool(check())
    except Exception:
        return False


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


def _unlike(other: Any) -> Any:
    """A value of the other operand's plain type that is not equal to it (None if it has no such type)."""
    kind = type(other)
    if kind is bool or kind not in (int, float, str, bytes, tuple, list):
        return None
    if kind is float:
        return other + 1e6 + random.random() if math.isfinite(other) else 0.5
    if kind is int:
        return other + 10 ** 6 + random.randrange(1000)
    if kind is str:
        return other + "\u2063" + str(random.randrange(10 ** 6))
    if kind is bytes:
        return other + b"\x00" + os.urandom(4)
    return kind([*other, _Stranger()])


def _changed(other: Any) -> Any:
    """A copy of an object made of numbers and strings (made without running its code) with every field
    changed; None for any other object (its equality may rest on what cannot be changed here)."""
    fields = getattr(other, "__dict__", None)
    if type(other) in PLAIN or not isinstance(fields, dict) or not fields:
        return None
    if any(type(v) not in (int, float, str, bytes, bool) for v in fields.values()):
        return None
    changed = {k: (not v) if type(v) is bool else _unlike(v) for k, v in fields.items()}
    try:
        twin = object.__new__(type(other))
        twin.__dict__.update(changed)
    except (TypeError, AttributeError):
        return None
    return twin


def _where(method: Any, root: str) -> str:
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    if code is None:
        return type(method).__name__
    filename = code.co_filename
    return f"{filename[len(root):] if filename.startswith(root) else filename}:{code.co_firstlineno}"


def encode(value: Any, depth: int = 0) -> Any:
    """Plain data as tagged JSON the keeper can rebuild (decode), or None for anything else."""
    kind = type(value)
    if value is None or kind is bool:
        return ["c", value]
    if kind is int:
        return ["i", str(value)] if abs(value) < 10 ** 300 else None
    if kind is float:
        return ["f", value.hex()]
    if kind is str:
        return ["s", value] if len(value) <= 4096 else None
    if kind is bytes:
        return ["y", value.hex()] if len(value) <= 4096 else None
    if kind in (list, tuple, set, frozenset) and depth < 3 and len(value) <= 64:
        items = [encode(v, depth + 1) for v in (sorted(value, key=repr) if kind in (set, frozenset) else value)]
        return None if any(i is None for i in items) else [_TAGS[kind], items]
    if kind is dict and depth < 3 and len(value) <= 64:
        items = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        return None if any(None in pair for pair in items) else ["D", items]
    return None


def decode(data: Any) -> Any:
    """Rebuild what `encode` wrote (builtins only; raises ValueError on anything else)."""
    tag, body = data[0], data[1]
    if tag == "c" and (body is None or isinstance(body, bool)):
        return body
    simple: dict[str, Callable[[Any], Any]] = {"i": int, "f": float.fromhex, "s": str, "y": bytes.fromhex}
    if tag in simple:
        return simple[tag](body)
    kinds = {v: k for k, v in _TAGS.items()}
    if tag in kinds and isinstance(body, list):
        return kinds[tag]([decode(b) for b in body])
    if tag == "D" and isinstance(body, list):
        return {decode(k): decode(v) for k, v in body}
    raise ValueError(f"not an encoded value: {tag!r}")
