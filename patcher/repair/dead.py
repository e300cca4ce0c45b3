"""Dead branches: edits that make a branch unreachable, which is deleting code in disguise.

A branch of an `if`/`elif` chain whose test repeats the test of an earlier branch of the same chain can
never run, and neither can the body of an `if`/`while` whose test is a false constant. A suite that
checks only results lets such an edit through whenever another path computes the same answer: an
`elif n == 1:` fast path with a bug in it, after `if n == 0: raise …`, turned into `elif n == 0:` passes
every test (the general path handles `n == 1` too) and fixes nothing. Such a candidate is the
"functionality removal" anti-pattern of Tan et al. (FSE 2016); the engine refuses it. Only branches the
edit made dead count: code that was dead before is not the candidate's doing.
"""

from __future__ import annotations

import ast
from collections import Counter

_IMPURE = ast.Call | ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr


def makes_dead_branch(old: ast.Module, new_text: str) -> bool:
    """Whether the new text has a dead branch the old tree does not."""
    try:
        new = ast.parse(new_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return bool(_dead(new) - _dead(old))


def _dead(tree: ast.Module) -> Counter[str]:
    """The tests of the dead branches in `tree`, as dumps (positions left out), counted."""
    out: Counter[str] = Counter()
    elifs = {id(n.orelse[0]) for n in ast.walk(tree) if isinstance(n, ast.If) and _is_elif(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While) and isinstance(node.test, ast.Constant) and not node.test.value:
            out[ast.dump(node.test)] += 1
        if isinstance(node, ast.If) and id(node) not in elifs:
            seen: set[str] = set()
            for branch in _chain(node):
                if any(isinstance(n, _IMPURE) for n in ast.walk(branch.test)):
                    continue  # `elif next(it):` after `if next(it):` tests something else
                test = ast.dump(branch.test)
                out[test] += test in seen
                seen.add(test)
    return +out


def _is_elif(node: ast.If) -> bool:
    return len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)


def _chain(node: ast.If) -> list[ast.If]:
    chain = [node]
    while _is_elif(chain[-1]):
        chain.append(chain[-1].orelse[0])  # type: ignore[arg-type]
    return chain
