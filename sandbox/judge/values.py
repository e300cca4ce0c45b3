"""The values a test compares, seen at run time (the values judge, box side).

The judge compiles each test module with its comparisons (`a == b`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`)
and its calls of a function named `isclose` (`math.isclose`) turned into calls of `Values.compare`, as pytest's
assertion rewriting turns asserts into code that keeps the operands; `unittest` assert methods are wrapped on the
instance (`assertEqual` and its kin, `assertAlmostEqual`). `==` with the stand-in's `pytest.approx` is a
comparison like any other. Each comparison is computed once, as written. Its operands leave on the child's pipe
where they are plain data (the keeper recomputes the comparison, operands.py), and, in the context that watches
the diff, a comparison that holds is put to strangers (strangers.py), at every depth of its operands: a value
that is degenerate there (`overload`) is reported. Where its method is the diff's (the tracer saw the diff's code
run in the check, or the method's code holds an added line, or it is no Python function at all on a class of the
repository), it refuses; else it is a hint. A library's value that equals anything (`unittest.mock.ANY`) refuses
too (the host makes it a hint where the base's run shows it as well); its other oddities are the library's
nature, not reported. Builtin values and the judge's own are never judged: only their own code can be degenerate.
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import sys
from typing import Any, Callable

_NODE_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
             ast.In: "in", ast.NotIn: "not in"}
HOOK = "@patcher_compare"
CALLED = ("isclose",)
"""Calls captured by name; `math.isclose` is rechecked by the keeper, any other only counted as made."""
UNITTEST = {"assertEqual": "==", "assertEquals": "==", "assertNotEqual": "!=", "assertIn": "in",
            "assertNotIn": "not in", "assertListEqual": "==", "assertTupleEqual": "==", "assertDictEqual": "==",
            "assertSetEqual": "==", "assertSequenceEqual": "==", "assertMultiLineEqual": "==", "assertLess": "<",
            "assertLessEqual": "<=", "assertGreater": ">", "assertGreaterEqual": ">=",
            "assertAlmostEqual": "almost", "assertAlmostEquals": "almost", "assertNotAlmostEqual": "not almost",
            "assertNotAlmostEquals": "not almost"}
MAX_RECORDS = 200
MAX_INSPECTED = 20


class _Rewrite(ast.NodeTransformer):
    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        op = _NODE_OPS.get(type(node.ops[0])) if len(node.ops) == 1 else None
        if op is None:
            return node
        return _hook(node, op, node.left, node.comparators[0])

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in CALLED:
            return node
        keywords = ast.Dict(keys=[None if k.arg is None else ast.Constant(k.arg) for k in node.keywords],
                            values=[k.value for k in node.keywords])
        return _hook(node, "call", func, ast.Tuple(elts=[ast.Tuple(elts=node.args, ctx=ast.Load()), keywords],
                                                   ctx=ast.Load()))


def _hook(node: ast.expr, op: str, left: ast.expr, right: ast.expr) -> ast.expr:
    call = ast.Call(func=ast.Name(id=HOOK, ctx=ast.Load()), args=[ast.Constant(op), ast.Constant(node.lineno), left,
                                                                   right], keywords=[])
    return ast.copy_location(call, node)


def rewrite(text: str, path: str) -> Any:
    """The module's code with its comparisons captured (line numbers as they were)."""
    tree = _Rewrite().visit(ast.parse(text, path))
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


class Values:
    def __init__(self, emit: Callable[[dict[str, Any]], None], judge_lines: Callable[[Any], bool] | None,
                 probe: Callable[[Callable[[], Any]], tuple[Any, bool]] | None, repo_root: str, operands: Any,
                 strangers: Any, judge_types: frozenset[type] = frozenset(),
                 named: Callable[[Any], bool] = lambda value: False) -> None:
        """`judge_lines(code)`: whether a code object holds the diff's lines (None: do not judge values, only
        record operands); `probe(fn)`: fn's result and whether the diff's code ran in it; `operands`, `strangers`:
        those modules of this folder; `judge_types`: the judge's own classes (never judged); `named(value)`:
        whether a test module names the value (`from unittest.mock import ANY`: the test's own expected value)."""
        self.emit, self.judge_lines, self.probe, self.named = emit, judge_lines, probe, named
        self.ops, self.strangers = operands, strangers
        self.judge_types = judge_types | {operands.Approx, strangers.Stranger}
        self.root = repo_root.rstrip("/") + "/"
        self.records: list[int] = [0]
        """A counter kept in place: the runtime judge watches this object, and the test's own comparisons run
        while the diff's code calls back into the test."""
        self.lines_seen: set[int] = set()
        self.found: set[tuple[type, str, bool]] = set()
        self.inspected: dict[tuple[int, type, type], int] = {}

    def compare(self, op: str, line: int, left: Any, right: Any) -> Any:
        if op == "call":
            return self._called(line, left, *right)
        result = self.ops.OPS[op](left, right)
        self.seen(op, line, left, right, result)
        return result

    def _called(self, line: int, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = func(*args, **kwargs)
        if func is math.isclose and len(args) == 2 and set(kwargs) <= {"rel_tol", "abs_tol"}:
            spec = [args[1], kwargs.get("rel_tol", 1e-09), kwargs.get("abs_tol", 0.0)]
            self.seen("isclose", line, args[0], spec, result)
        else:
            self.seen("call", line, None, None, None)  # counted as made (a required line), nothing to redo
        return result

    def seen(self, op: str, line: int, left: Any, right: Any, result: Any) -> None:
        ok = result if isinstance(result, bool) else None
        if self.records[0] < MAX_RECORDS or line not in self.lines_seen:
            self.records[0] += 1
            self.lines_seen.add(line)
            plain = op != "call"
            self.emit({"k": "cmp", "line": line, "op": op, "l": self.ops.encode(left) if plain else None,
                       "r": self.ops.encode(right) if plain else None, "ok": ok})
        if ok and self.judge_lines is not None and op != "not almost" and self._fresh(line, left, right):
            with contextlib.suppress(Exception):  # the judge's own check never changes the test's outcome
                self._inspect(op, line, left, right)

    def _fresh(self, line: int, left: Any, right: Any) -> bool:
        """Whether this line has put fewer than MAX_INSPECTED comparisons of these types to strangers (a loop of
        asserts is not judged a thousand times)."""
        key = (line, type(left), type(right))
        self.inspected[key] = self.inspected.get(key, 0) + 1
        return self.inspected[key] <= MAX_INSPECTED

    def wrap(self, case: Any) -> None:
        """A unittest.TestCase instance's assert methods, as instance attributes that note their operands."""
        for name, op in UNITTEST.items():
            method = getattr(case, name, None)
            if method is not None:
                setattr(case, name, self._wrapped(method, op))

    def _wrapped(self, method: Callable[..., Any], op: str) -> Callable[..., Any]:
        def check(first: Any, second: Any, *args: Any, **kwargs: Any) -> Any:
            line = sys._getframe(1).f_lineno
            out = method(first, second, *args, **kwargs)
            self.seen(op, line, first, second, True)
            return out

        def close(first: Any, second: Any, places: Any = None, msg: Any = None, delta: Any = None) -> Any:
            line = sys._getframe(1).f_lineno
            out = method(first, second, places, msg, delta)
            self.seen(op, line, first, [second, places, delta], True)
            return out
        return close if op in ("almost", "not almost") else check

    def _inspect(self, op: str, line: int, left: Any, right: Any) -> None:
        near: Callable[[Any, Any], Any] | None = None
        exact = op == "=="  # as the test spelled it (an assertAlmostEqual on containers is put as == below)
        spec = right[1:] if op in ("isclose", "almost") else []
        if op == "isclose":
            right, near = right[0], lambda a, b: math.isclose(a, b, rel_tol=spec[0], abs_tol=spec[1])
        elif op == "almost" and not isinstance(left, (list, tuple, dict, set)):
            right, near = right[0], lambda a, b: self.ops.almost(a, [b, *spec])
        elif op == "almost":
            op, right = "==", right[0]
        for value, other, close in self.strangers.pairs(left, right, near, self._approx):
            if type(value) in self.strangers.PLAIN or type(value).__module__ == "builtins" or \
                    type(value) in self.judge_types:
                continue
            top = exact and ((value is left and other is right) or (value is right and other is left))
            found = self.strangers.findings(value, other, op, close, top)
            if found:
                self._report(line, value, found)

    def _approx(self, value: Any) -> tuple[Any, Callable[[Any, Any], Any]] | None:
        if type(value) is not self.ops.Approx:
            return None
        rel, tolerance = value.rel, value.abs
        return value.expected, (lambda a, b: self.ops.Approx(b, rel, tolerance) == a)

    def _report(self, line: int, value: Any, found: list[Any]) -> None:
        best = next((f for f in found if f.strong), found[0])
        cls = type(value)
        key = (cls, best.method, best.strong)
        if key in self.found:
            return
        self.found.add(key)
        method = getattr(cls, best.method, None)
        if not best.strong:
            if not self._repo_made(cls):
                return
            diff = False
        else:
            diff = self._diffs(value, method, best.check)
            if not diff and not self._repo_made(cls):
                if not best.why.startswith("equals a fresh object") and not best.why.endswith(" alike"):
                    return  # a library's odd hash or order is the library's nature, not the repository's doing
                diff = not self.named(value)  # a library's value equal to anything (unittest.mock.ANY) the fix
                # handed to the test's comparison; one the test names is the test's own expected value
        self.emit({"k": "obs", "judge": "values", "kind": "overload", "refuses": diff, "line": line,
                   "type": f"{cls.__module__}.{cls.__qualname__}"[:120], "method": _where(method, self.root),
                   "what": f"the compared value ({cls.__qualname__}) {best.why}"[:300]})

    def _diffs(self, value: Any, method: Any, check: Callable[[], Any]) -> bool:
        """Whether the degenerate comparison is the diff's doing."""
        assert self.judge_lines is not None
        if self.probe is not None and self.probe(lambda: self.strangers.holds(check))[1]:
            return True
        code = getattr(getattr(method, "__func__", method), "__code__", None)
        if code is not None:
            return self.judge_lines(code) or not os.path.isfile(code.co_filename)
        return self._repo_made(type(value))

    def _repo_made(self, cls: type) -> bool:
        module = sys.modules.get(cls.__module__)
        return str(getattr(module, "__file__", "") or "").startswith(self.root)


def _where(method: Any, root: str) -> str:
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    if code is None:
        return type(method).__name__
    filename = code.co_filename
    return f"{filename[len(root):] if filename.startswith(root) else filename}:{code.co_firstlineno}"
