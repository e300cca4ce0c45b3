"""Spelling rules on what a diff adds: source that could tell it is under test, or reach the harness.

Code under test runs with full power inside the test process, so a source change that notices the runner
(PYTEST_CURRENT_TEST, `pytest` in sys.modules, sys.argv), hooks interpreter exit (atexit, os._exit),
walks frames or the gc, writes builtins or sys.modules, or runs code from built strings could defeat an
in-process check. But a command-line entry point reads sys.argv, and a library reads frames and the
environment for good reasons: a match is a review hint with the line quoted (verify/judges/constructs/looks.py), never a
verdict; what the code does at run time is the behavioural judges'. Comments and strings count, and string
constants of a statement are also read joined together, so 'PY' + 'TEST_…' spells what it means. New test
files get the rules that reach the harness itself (frames, gc, exit hooks, sys.modules, the evidence
channel), also read joined.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from patcher.verify.policy.rules import is_config_path, is_test_path
from patcher.verify.policy.treediff import Change

_RULES: tuple[tuple[str, str, bool], ...] = (
    # (what it is, pattern over an added line, also applies to new test files)
    ("looks for the test runner", r"PYTEST|\b_?pytest\b|\bunittest\b|\bpluggy\b|conftest|junit|\bnose2?\b", False),
    # sys's argv, not a parameter named argv (an entry point's `def main(argv=None)` is no probe)
    ("reads the command line", r"\bsys\b.*\bargv\b|\borig_argv\b|[\"']argv[\"']", False),
    ("reads the environment", r"\benviron\b|\bgetenv\b|\bputenv\b|/proc/", False),
    ("hooks interpreter exit", r"\batexit\b|\b_exit\b|\bexcepthook\b|\bsettrace\b|\bsetprofile\b", True),
    ("inspects frames or the gc", r"\bgc\b|_getframe|currentframe|\bf_(?:back|globals|locals|code|builtins)\b"
     r"|\btb_frame\b|\b(?:gi|cr|ag)_frame\b|\binspect\b|\btraceback\b|\bfaulthandler\b|\baddaudithook\b", True),
    ("writes builtins or sys.modules", r"\bbuiltins\b|__builtins__|\bmodules\b|\bmeta_path\b|\bpath_hooks\b"
     r"|\bsys\s*\.\s*path\b", False),
    ("reflects on objects", r"__(?:dict|class|subclasses|globals|code|closure|mro|bases|loader|spec|import)__"
     r"|\b(?:globals|vars|locals)\s*\(", False),
    ("runs built code", r"\bexec\b|\beval\b|(?<!\.)\bcompile\s*\(|\bimportlib\b|\bimp\b|\brunpy\b|\bctypes\b"
     r"|\bmarshal\b|\bpickle\b|\bsubprocess\b|\bos\s*\.\s*(?:system|popen|exec\w*|spawn\w*|fork)\b", False),
    ("decodes hidden text", r"\bchr\s*\(|fromhex|\bbase64\b|\bcodecs\b|rot.?13|\[\s*::\s*-1\s*\]", False),
    ("reaches the harness", r"patcher|PATCHER", True),
    ("reaches sys.modules or namespaces", r"modules|__dict__|__globals__|__builtins__|\bvars\s*\(", True),
)
_COMPILED = [(what, re.compile(rx), tests) for what, rx, tests in _RULES]


@dataclass(frozen=True)
class Probe:
    path: str
    line: int
    text: str
    rule: str
    kind: str = "probe"
    """probe (a spelling rule below), a construct's kind (overload, monkeypatch, computed_name), or a hint's
    (literal, module_state: verify/hints.py)."""


def find_probes(changes: list[Change]) -> list[Probe]:
    """Every added line of the diff that matches a rule (source files: all rules; new tests: the harness ones)."""
    found: list[Probe] = []
    for c in changes:
        if c.kind == "deleted" or is_config_path(c.path):
            continue
        test = is_test_path(c.path)
        rules = [(w, rx) for w, rx, for_tests in _COMPILED if for_tests or not test]
        lines = dict(c.added_lines)
        for n, text in c.added_lines:
            found += [Probe(c.path, n, text, what) for what, rx in rules if rx.search(text)][:1]
        if c.path.endswith(".py"):
            found += _ast_probes(c, lines, rules)
    return list(dict.fromkeys(found))


def _ast_probes(c: Change, lines: dict[int, str], rules: list[tuple[str, re.Pattern[str]]]) -> list[Probe]:
    """What the line rules miss: string constants joined across a statement. (Names computed at run time
    are the rules by construct's, verify/constructs.py, which know the base's own getattr style.)"""
    try:
        tree = ast.parse(c.new_text or "")
    except SyntaxError:
        return []
    out = []
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt) or stmt.lineno not in lines:
            continue
        own = list(_own_nodes(stmt))
        texts = sorted((n.lineno, n.col_offset, n.value) for n in own
                       if isinstance(n, ast.Constant) and isinstance(n.value, str))
        joined = "".join(t for *_, t in texts)  # in source order, as 'a' + 'b' reads
        out += [Probe(c.path, stmt.lineno, lines[stmt.lineno], f"{what}, in joined strings")
                for what, rx in rules if rx.search(joined)][:1]
    return out


def _own_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The statement's expressions, not those of statements nested in its body (they are judged on their own)."""
    out: list[ast.AST] = []
    todo = [n for n in ast.iter_child_nodes(stmt) if not isinstance(n, ast.stmt)]
    while todo:
        node = todo.pop()
        out.append(node)
        todo += [n for n in ast.iter_child_nodes(node) if not isinstance(n, ast.stmt)]
    return out

