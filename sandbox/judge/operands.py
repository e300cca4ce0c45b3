"""The comparisons a test makes, as the keeper redoes them: the operators, the closeness checks and the operands.

A comparison is one of OPS: `==` and the other operators, and the closeness checks a test spells otherwise:
`isclose` (`math.isclose(a, b, rel_tol=, abs_tol=)`: the right operand is `[b, rel_tol, abs_tol]`), `almost` and
`not almost` (unittest's `assertAlmostEqual` / `assertNotAlmostEqual`: `[second, places, delta]`), and `==` with an
`Approx`, the stand-in's `pytest.approx` (standin.py hands out this class: one implementation, the one the keeper
runs). Operands that are plain data travel as tagged JSON (`encode`), an `Approx` of plain data too, and the
keeper rebuilds them from data alone (`decode`) and recomputes the comparison: a claim that does not hold there
is a forgery (accept.py).
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range)
_TAGS: dict[Any, str] = {list: "L", tuple: "T", set: "S", frozenset: "F"}


def isclose(a: Any, spec: Any) -> bool:
    """`math.isclose(a, b, rel_tol=, abs_tol=)` with `spec` = [b, rel_tol, abs_tol]."""
    b, rel_tol, abs_tol = spec
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def almost(first: Any, spec: Any) -> bool:
    """Whether unittest's `assertAlmostEqual(first, second, places, delta=)` passes, `spec` = [second, places,
    delta] (its own steps: equal, else the difference within `delta`, else rounded to `places` (7) is zero)."""
    second, places, delta = spec
    if first == second:
        return True
    if delta is not None and places is not None:
        raise TypeError("specify delta or places not both")
    diff = abs(first - second)
    if delta is not None:
        return bool(diff <= delta)
    return bool(round(diff, 7 if places is None else places) == 0)


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "isclose": isclose, "almost": almost, "not almost": lambda a, b: not almost(a, b)}


class Approx:
    """`pytest.approx(expected, rel=None, abs=None)`: numbers within a tolerance (relative 1e-6, absolute 1e-12 by
    default; `abs` alone makes the relative one 0), lists, tuples and dicts item by item, anything else by `==`."""

    def __init__(self, expected: Any, rel: float | None = None, abs: float | None = None) -> None:
        self.expected, self.rel, self.abs = expected, rel, abs

    def close(self, actual: Any, expected: Any) -> bool:
        if isinstance(expected, dict):
            return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
                self.close(actual[k], expected[k]) for k in expected)
        if isinstance(expected, (list, tuple)):
            return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                    and all(self.close(a, e) for a, e in zip(actual, expected)))
        if not isinstance(expected, (int, float, complex)) or isinstance(expected, bool):
            return bool(actual == expected)
        try:
            if actual == expected:
                return True
            rel = self.rel if self.rel is not None else (0.0 if self.abs is not None else 1e-6)
            tolerance = max(rel * abs(expected), self.abs if self.abs is not None else 1e-12)
            gap = abs(actual - expected)
            return not math.isnan(gap) and bool(gap <= tolerance)
        except TypeError:
            return False

    def __eq__(self, actual: object) -> bool:
        return self.close(actual, self.expected)

    def __ne__(self, actual: object) -> bool:
        return not self == actual

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"approx({self.expected!r})"


def approx(expected: Any, rel: float | None = None, abs: float | None = None, nan_ok: bool = False) -> Approx:
    return Approx(expected, rel, abs)


def encode(value: Any, depth: int = 0) -> Any:
    """Plain data (and an Approx of plain data) as tagged JSON the keeper can rebuild (decode), or None for
    anything else."""
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
    if kind is Approx and depth < 3:
        parts = [encode(value.expected, depth + 1), encode(value.rel, depth + 1), encode(value.abs, depth + 1)]
        return None if None in parts else ["A", parts]
    return None


def decode(data: Any) -> Any:
    """Rebuild what `encode` wrote (builtins and Approx only; raises ValueError on anything else)."""
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
    if tag == "A" and isinstance(body, list) and len(body) == 3:
        expected, rel, tolerance = (decode(b) for b in body)
        if not all(t is None or type(t) in (int, float) for t in (rel, tolerance)):
            raise ValueError("an approx whose tolerance is no number")
        return Approx(expected, rel, tolerance)
    raise ValueError(f"not an encoded value: {tag!r}")
