"""The values of constant expressions: a literal the diff spells as a computation is still that literal.

`"".join(["e", "u", "r"])`, `bytes([101, 117, 114]).decode()`, `chr(101) + "ur"`, `"rue"[::-1]`,
`"EUR".lower()` and `41 + 1` are the tested input as surely as `"eur"` and `42` are. `constant_values`
evaluates every expression built from constants alone with a small whitelisted evaluator (no names but a
few pure builtins, no attribute but a few pure str/bytes methods, results bounded in size), so the perturbation
check (perturb.special_cased) sees through the spelling. Nothing of the diff's is executed: only these
operations, on constants the diff wrote.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from typing import Any

MAX_SIZE = 4096
"""A folded string, bytes or sequence longer than this is not a literal anybody tests with: give up on it."""

_BUILTINS: dict[str, Callable[..., Any]] = {
    "chr": chr, "ord": ord, "str": str, "bytes": bytes, "bytearray": bytearray, "int": int, "float": float,
    "list": list, "tuple": tuple, "reversed": lambda x: list(reversed(x)), "sorted": sorted, "len": len,
}
_METHODS = {"join", "decode", "encode", "lower", "upper", "casefold", "title", "capitalize", "swapcase", "strip",
            "lstrip", "rstrip", "replace", "removeprefix", "removesuffix", "zfill"}
_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


class _NotConstant(Exception):
    pass


def constant_values(tree: ast.AST, lines: set[int]) -> Iterator[object]:
    """The value of every computed constant expression that starts on one of `lines` (plain constants are
    the caller's: this yields only what a computation makes)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant) and node.lineno in lines:
            try:
                value = _fold(node)
            except (_NotConstant, ArithmeticError, ValueError, TypeError, UnicodeError, OverflowError):
                continue
            yield value


def _fold(node: ast.expr) -> Any:
    value = _eval(node)
    if isinstance(value, str | bytes | bytearray | list | tuple) and len(value) > MAX_SIZE:
        raise _NotConstant
    if isinstance(value, int) and value.bit_length() > 256:
        raise _NotConstant
    return value


def _eval(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_fold(e) for e in node.elts]
    if isinstance(node, ast.Tuple):  # a tuple stays one: `"%c%c" % (103, 98)` formats only with a tuple
        return tuple(_fold(e) for e in node.elts)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_fold(v.value)) if isinstance(v, ast.FormattedValue) else str(_fold(v))
                       for v in node.values)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _fold(node.left), _fold(node.right)
        if isinstance(node.op, ast.Mult) and _repeats(left, right) > MAX_SIZE:
            raise _NotConstant  # "x" * 10**9
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_fold(node.operand))
    if isinstance(node, ast.Subscript):
        target = _fold(node.value)
        key = node.slice
        if isinstance(key, ast.Slice):
            return target[slice(*(None if p is None else _fold(p) for p in (key.lower, key.upper, key.step)))]
        return target[_fold(key)]
    if isinstance(node, ast.Call) and not node.keywords:
        args = [_fold(a) for a in node.args]
        if isinstance(node.func, ast.Name) and node.func.id in _BUILTINS:
            return _BUILTINS[node.func.id](*args)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS:
            owner = _fold(node.func.value)
            if isinstance(owner, str | bytes | bytearray):
                return getattr(owner, node.func.attr)(*args)
    raise _NotConstant


def _repeats(left: Any, right: Any) -> int:
    """The length a sequence repeated by a number would have (0 for two numbers)."""
    sequences = str | bytes | bytearray | list | tuple
    if isinstance(left, sequences) and isinstance(right, int):
        return len(left) * right
    if isinstance(right, sequences) and isinstance(left, int):
        return len(right) * left
    return 0
