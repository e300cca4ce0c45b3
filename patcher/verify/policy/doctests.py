"""Source modules the suite collects for their doctests: their code is source, their examples are tests.

pytest's `--doctest-modules` (often in the repository's own settings) makes every source module a test
module, so a rule that no existing test file may change would refuse every fix to such a module. The base
suite's run says which of its files held doctest items only (the harness marks them); for those, the diff
may change the code, but the doctest examples (source, expected output and options, from every string of
the module as doctest's parser reads them) must stay exactly as they were, and the file may not go.
"""

from __future__ import annotations

import ast
import doctest
from collections import Counter

from patcher.verify.policy.treediff import Change

Example = tuple[str, str, tuple[tuple[int, bool], ...]]


def examples(text: str) -> Counter[Example] | None:
    """Every doctest example in the module's strings; None when it does not parse."""
    try:
        tree = ast.parse(text.encode("utf-8"))
    except (SyntaxError, ValueError):
        return None
    parser = doctest.DocTestParser()
    out: Counter[Example] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ">>>" in node.value:
            try:
                found = parser.get_examples(node.value)
            except ValueError:  # a malformed example is still text a doctest run would read
                out[(node.value, "", ())] += 1
                continue
            out.update((e.source, e.want, tuple(sorted(e.options.items()))) for e in found)
    return out


def changed_doctests(changes: list[Change], doctest_files: frozenset[str]) -> list[str]:
    """Policy violations: a doctest module deleted, or its examples changed."""
    out = []
    for c in changes:
        if c.path not in doctest_files:
            continue
        if c.kind == "deleted" or c.new_text is None:
            out.append(f"{c.path}: the suite runs its doctests; it may not be deleted")
            continue
        before, after = examples(c.old_text or ""), examples(c.new_text)
        if before is None or after is None or before != after:
            out.append(f"{c.path}: its doctest examples are tests the suite runs; the code may change, the "
                       "examples and their expected output may not")
    return out
