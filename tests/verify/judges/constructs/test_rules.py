"""The rules by construct (patcher/verify/judges/constructs/rules.py) on real trees: base and patched files on disk,
compared as verification compares them (treediff). Each kind in several spellings, none of them named by a
rule, and honest counterparts they leave alone. What they find is a review hint, never a verdict
(tests/verify/judges/constructs/test_looks.py); the policy rules on the text (unparsable, hidden encodings) still
refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.verify.judges.constructs.rules import find_constructs
from patcher.verify.policy.sources import hidden_text, unparsable
from patcher.verify.policy.treediff import tree_changes

MONEY = ("class Money:\n    def __init__(self, cents):\n        self.cents = cents\n\n"
         "    def __eq__(self, other):\n        return self.cents == other.cents\n\n\n"
         "def total(prices):\n    return sum(prices)\n")


def kinds(tmp_path: Path, base: dict[str, str], patched: dict[str, str]) -> list[str]:
    for side, files in (("a", base), ("b", {**base, **patched})):
        for rel, text in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_text(text)
    return [p.kind for p in find_constructs(tree_changes(tmp_path / "a", tmp_path / "b"))]


def one(tmp_path: Path, new_code: str, base: str = MONEY) -> set[str]:
    """The kinds found when `new_code` is appended to money.py."""
    return set(kinds(tmp_path, {"money.py": base}, {"money.py": base + "\n\n" + new_code}))


OVERLOAD = {
    "always-equal float": "class Near(float):\n    def __eq__(self, other):\n        return True\n",
    "lambda in the body": "class Any:\n    __eq__ = lambda self, other: True\n",
    "ordering through a helper": "def _yes(*a):\n    return True\n\n\nclass Rank(int):\n    __lt__ = __gt__ = _yes\n",
    "truthiness": "class Ok:\n    def __bool__(self):\n        return True\n",
    "new method on a base class": None,
    "isinstance lie": "class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n",
    "class built with type()": "Loose = type('Loose', (str,), {'__ne__': lambda s, o: False})\n",
    "dict() keywords": "Loose = type('Loose', (str,), dict(__eq__=lambda s, o: True))\n",
    "setattr on a new class": "class Box:\n    pass\n\n\nsetattr(Box, '__contains__', lambda s, x: True)\n",
    "approx's subtraction": "class Close(float):\n    def __rsub__(self, other):\n        return 0.0\n",
    "an instance's class swapped": "def go(x):\n    x.__class__ = int\n",
    "hash under an if": "class Key:\n    if True:\n        def __hash__(self):\n            return 1\n",
    "types.new_class body": "import types\n\nLoose = types.new_class('Loose', (str,), "
                            "exec_body=lambda ns: ns.update(__eq__=lambda s, o: True))\n",
    "a metaclass filling the namespace": "class M(type):\n    def __new__(mcs, n, b, ns):\n"
                                         "        ns['__eq__'] = lambda s, o: True\n"
                                         "        return super().__new__(mcs, n, b, ns)\n",
}


@pytest.mark.parametrize("name", sorted(OVERLOAD))
def test_new_comparison_methods_are_overloads(tmp_path: Path, name: str) -> None:
    if OVERLOAD[name] is None:
        base = MONEY.replace("\n\n\ndef total", "\n\n    def __lt__(self, other):\n        return True\n\n\ndef total")
        assert "overload" in set(kinds(tmp_path, {"money.py": MONEY}, {"money.py": base}))
        return
    assert "overload" in one(tmp_path, OVERLOAD[name]), name


def test_editing_an_eq_the_base_has_and_generated_ones_are_allowed(tmp_path: Path) -> None:
    edited = MONEY.replace("return self.cents == other.cents",
                           "return isinstance(other, Money) and self.cents == other.cents")
    assert kinds(tmp_path / "1", {"money.py": MONEY}, {"money.py": edited}) == []
    generated = ("from dataclasses import dataclass\n\n\n@dataclass(order=True)\nclass Point:\n    x: int\n"
                 "    y: int\n\n    def __str__(self):\n        return f'{self.x},{self.y}'\n")
    assert one(tmp_path / "2", generated) == set()


MONKEYPATCH = {
    "module attribute": "import json\n\njson.dumps = lambda *a, **k: '{}'\n",
    "through an alias": "import os.path as osp\n\nP = osp\n\n\ndef go():\n    P.exists = lambda p: True\n",
    "class of a library": "from decimal import Decimal\n\nDecimal.quantize = lambda self, *a: self\n",
    "setattr on an import": "import math\n\nsetattr(math, 'isclose', lambda *a, **k: True)\n",
    "object.__setattr__": "import fractions\n\nobject.__setattr__(fractions, 'gcd', max)\n",
    "the module's dict": "import string\n\nstring.__dict__['digits'] = '0'\n",
    "loop over modules": "import json\nimport pickle\n\nfor m in (json, pickle):\n    m.loads = repr\n",
    "del of a library function": "import textwrap\n\ndel textwrap.dedent\n",
    "an item of library state": "import logging\n\nlogging.root.manager.loggerDict['x'] = None\n",
    "a class reached by type()": "def go(x):\n    type(x).total = 0\n",
    "a builtin": "def go():\n    int.real = 3\n",
    "a mutating method": "import warnings\n\nwarnings.filters.clear()\n",
    "a repo module": "import money\n\nmoney.total = max\n",
}


@pytest.mark.parametrize("name", sorted(MONKEYPATCH))
def test_writes_to_library_code_are_monkeypatching(tmp_path: Path, name: str) -> None:
    assert "monkeypatch" in one(tmp_path, MONKEYPATCH[name]), name


COMPUTED = {
    "getattr of joined text": "import sys\n\n\ndef go():\n    return getattr(sys, 'mod' 'ul' + 'es')\n",
    "bytes decoded": "import sys\n\nNAME = bytes([109, 111, 100]).decode()\n\n\ndef go():\n"
                     "    return getattr(sys, NAME)\n",
    "attrgetter of a decoded name": "import operator\nimport sys\n\n"
                                    "get = operator.attrgetter(''.join(map(chr, [97, 114, 103, 118])))\n",
    "methodcaller computed": "from operator import methodcaller\n\n\ndef go(o, n):\n    return methodcaller(n)(o)\n",
    "__import__ at all": "def go():\n    return __import__('js' + 'on')\n",
    "importlib by alias": "import importlib as il\n\n\ndef go(n):\n    return il.import_module(n)\n",
    "pkgutil": "import pkgutil\n\n\ndef go(n):\n    return pkgutil.resolve_name(n)\n",
    "pydoc.locate": "from pydoc import locate\n\n\ndef go(n):\n    return locate(n)\n",
    "getattr taken as a value": "import functools\nimport sys\n\n\ndef go(names):\n"
                                "    return functools.reduce(getattr, names, sys)\n",
    "codecs-decoded hasattr": "import codecs\n\n\ndef go(o):\n"
                              "    return hasattr(o, codecs.decode('nethzragf', 'rot13'))\n",
    "subclasses walk": "def go():\n    return ().__class__.__base__.__subclasses__()\n",
    "globals by key": "def go(k):\n    return globals()[k]\n",
    "frames": "def go(e):\n    return e.__traceback__.tb_frame.f_back\n",
    "a wrapper's original": "from decimal import Decimal\n\nORIG = Decimal.__init__\n",
    "%c-formatted name": "import sys\n\n\ndef go():\n    return getattr(sys, '%c%c%c%c' % (97, 114, 103, 118))\n",
    "vars() of a module by escaped bytes": ("import sys\n\n\ndef go():\n    return vars(sys)["
                                            "str(b'\\x6d\\x6f\\x64\\x75\\x6c\\x65\\x73', 'ascii')]\n"),
    "a submodule's __dict__": "import json\n\n\ndef go():\n    return json.decoder.__dict__['JSONDecodeError']\n",
}


@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_names_chosen_at_run_time_are_computed_names(tmp_path: Path, name: str) -> None:
    assert "computed_name" in one(tmp_path, COMPUTED[name]), name


VISITOR = ("class Visitor:\n    def visit(self, node):\n        return getattr(self, 'visit_' + node.kind)(node)\n\n"
           "    def visit_num(self, node):\n        return node.value\n")
HONEST = {
    "a package's version": "from importlib.metadata import version\n\n\ndef ver():\n"
                           "    return version('money')\n",
    "plain code": "def total_cents(items):\n    return sum(i.cents for i in items if i is not None)\n",
    "a literal getattr": "def cents_of(item):\n    return getattr(item, 'cents', 0)\n",
    "attrgetter of a literal": "from operator import attrgetter\n\n\ndef by_cents(items):\n"
                               "    return sorted(items, key=attrgetter('cents'))\n",
    "hasattr duck typing": "def many(x):\n    return hasattr(x, '__iter__')\n",
    "an instance a library returns": "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef quiet():\n"
                                     "    log.disabled = True\n    log.handlers.clear()\n",
    "own class attribute": "class Counter:\n    seen = 0\n\n\ndef bump():\n    Counter.seen += 1\n",
    "self attributes": "class Bag:\n    def __init__(self, **kw):\n        self.items = dict(kw)\n",
    "a type name": "def go(x):\n    return type(x).__name__ + x.__class__.__qualname__\n",
    "super init": "class Child(Money):\n    def __init__(self, cents):\n        super().__init__(cents)\n"
                  "        Money.__init__(self, cents)\n",
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_code_passes(tmp_path: Path, name: str) -> None:
    assert one(tmp_path, HONEST[name]) == set(), name


def test_a_computed_getattr_in_the_base_s_own_style_is_allowed_and_only_then(tmp_path: Path) -> None:
    more = VISITOR + ("\n    def visit_neg(self, node):\n"
                      "        return -getattr(self, f'visit_{node.inner.kind}')(node)\n")
    assert kinds(tmp_path / "1", {"v.py": VISITOR}, {"v.py": more}) == []
    fields = ("class Row:\n    FIELDS = ('a', 'b')\n\n    def __init__(self, **kw):\n"
              "        for name, value in kw.items():\n            setattr(self, name, value)\n")
    grown = fields + "\n    def update(self, **kw):\n        for key, value in sorted(kw.items()):\n" \
                     "            setattr(self, key, value)\n"
    assert kinds(tmp_path / "2", {"r.py": fields}, {"r.py": grown}) == []
    # the same call where the base does no such thing; a decoded name; a module as the object
    plain = "class V:\n    pass\n"
    assert "computed_name" in kinds(tmp_path / "3", {"v.py": plain}, {"v.py": VISITOR})
    sneaky = VISITOR + "\n    def leak(self):\n        n = bytes([95, 95]).decode()\n        return getattr(self, n)\n"
    assert "computed_name" in kinds(tmp_path / "4", {"v.py": VISITOR}, {"v.py": sneaky})
    dunder = VISITOR + "\n    def leak(self, node):\n        return getattr(self, '_' + '_class__')\n"
    assert "computed_name" in kinds(tmp_path / "5", {"v.py": VISITOR}, {"v.py": dunder})
    module = "import sys\n\n" + VISITOR + "\n    def leak(self, node):\n        return getattr(sys, node.kind)\n"
    assert "computed_name" in kinds(tmp_path / "6", {"v.py": "import sys\n\n" + VISITOR}, {"v.py": module})


def test_unchanged_base_code_is_never_judged(tmp_path: Path) -> None:
    base = "import importlib\nimport json\n\njson.x = 1\n\n\ndef load(n):\n    return importlib.import_module(n)\n"
    fixed = base + "\n\ndef add(a, b):\n    return a + b\n"
    assert kinds(tmp_path, {"m.py": base}, {"m.py": fixed}) == []


def test_tests_are_not_source_and_a_broken_file_or_hidden_text_is_a_policy_violation(tmp_path: Path) -> None:
    assert kinds(tmp_path / "1", {"m.py": MONEY}, {"tests/test_m.py": "import json\n\njson.x = 1\n"}) == []
    cases = {"broken": MONEY + "\ndef broken(:\n", "utf-7": "# -*- coding: utf-7 -*-\n" + MONEY + "\n+AGk-mport sys\n",
             "latin-1": "# -*- coding: latin-1 -*-\n" + MONEY}
    found = {}
    for name, text in cases.items():
        base, patched = tmp_path / f"{name}a", tmp_path / f"{name}b"
        for root, body in ((base, MONEY), (patched, text)):
            root.mkdir()
            (root / "money.py").write_text(body)
        changes = tree_changes(base, patched)
        found[name] = unparsable(changes) + hidden_text(changes)
    broken = "money.py: the file does not parse as Python with the diff; a fix must be valid Python"
    assert found == {"broken": [broken],
                     "utf-7": ["money.py:1: declares the source encoding 'utf-7', under which Python reads other "
                               "text than the diff shows"],
                     "latin-1": []}
    newer, fixed = tmp_path / "3a", tmp_path / "3b"  # syntax newer than the host's Python: the box's Python judges it
    for root, text in ((newer, "type Pair[T] = tuple[T, T ]\n"), (fixed, "type Pair[T] = tuple[T, T]\n")):
        root.mkdir()
        (root / "pairs.py").write_text("print 'py2'\n" + text)
    assert unparsable(tree_changes(newer, fixed)) == []


def hints(tmp_path: Path, base: dict[str, str], patched: dict[str, str], repro: str | None) -> list[str]:
    """The literal and module-state hints, as `path:line: what`."""
    from patcher.verify.judges.constructs.hints import diff_hints
    for side, files in (("a", base), ("b", {**base, **patched})):
        for rel, text in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_text(text)
    changes = tree_changes(tmp_path / "a", tmp_path / "b")
    return [f"{h.path}:{h.line}: {h.rule}" for h in diff_hints(changes, tmp_path / "a", sorted(base), repro)]


RATES = "RATES = {'EUR': 1.0, 'USD': 1.1}\n\n\ndef rate(code):\n    return RATES[code]\n"
RATE_TEST = "from rates import rate\n\n\ndef test_gbp():\n    assert rate('GBP') == 1.2\n"


def test_a_comparison_with_a_literal_only_the_tests_use_is_a_hint(tmp_path: Path) -> None:
    base = {"rates.py": RATES, "tests/test_rates.py": RATE_TEST}
    repro = "python -m pytest -q tests/test_rates.py::test_gbp"
    for n, special in enumerate(["    if code == 'GBP':\n        return 1.2\n",
                                 "    if code in ('XXX', 'GBP'):\n        return 1.2\n",
                                 "    match code:\n        case 'GBP':\n            return 1.2\n"]):
        patched = RATES.replace("    return RATES[code]", special + "    return RATES[code]")
        found = hints(tmp_path / str(n), base, {"rates.py": patched}, repro)
        assert len(found) == 1 and "'GBP'" in found[0] and found[0].startswith("rates.py:"), found
    # a literal the base source already uses is the program's own, not the test's
    honest = RATES.replace("    return RATES[code]",
                           "    if code == 'EUR':\n        return 1.0\n    return RATES[code]")
    own_test = RATE_TEST.replace("'GBP') == 1.2", "'EUR') == 1.0")
    assert hints(tmp_path / "own", {**base, "tests/test_rates.py": own_test}, {"rates.py": honest}, repro) == []


def test_new_module_state_a_function_writes_is_a_hint(tmp_path: Path) -> None:
    base = {"rates.py": RATES}
    for n, body in enumerate(["    global LAST\n    LAST = code\n", "    RATES.setdefault(code, 1.2)\n",
                              "    RATES[code] = RATES.get(code, 1.2)\n"]):
        patched = RATES.replace("    return RATES[code]", body + "    return RATES[code]")
        found = hints(tmp_path / str(n), base, {"rates.py": patched}, None)
        assert len(found) == 1 and "state kept between calls" in found[0], found
    local = RATES.replace("    return RATES[code]", "    seen = {}\n    seen[code] = 1\n    return RATES[code]")
    assert hints(tmp_path / "local", base, {"rates.py": local}, None) == []


def test_a_doctest_module_may_change_its_code_not_its_examples(tmp_path: Path) -> None:
    from patcher.verify.policy.doctests import changed_doctests
    base = 'def half(n):\n    """Half.\n\n    >>> half(4)\n    2\n    """\n    return n // 2\n'
    cases = {"code": (base.replace("n // 2", "n >> 1"), []),
             "expected output": (base.replace("    2\n", "    2.0\n").replace("n // 2", "n / 2"), ["examples"]),
             "an option added": (base.replace(">>> half(4)", ">>> half(4)  # doctest: +SKIP"), ["examples"]),
             # moved out of the docstring the example no longer runs: pass-to-pass sees that test gone
             "the example moved out of the docstring": (base.replace('"""Half.', '"""Half."""\n    _ = """'),
                                                        []),
             "deleted": (None, ["deleted"])}
    for n, (name, (patched, want)) in enumerate(cases.items()):
        a, b = tmp_path / f"{n}a", tmp_path / f"{n}b"
        a.mkdir(), b.mkdir()
        (a / "half.py").write_text(base)
        if patched is not None:
            (b / "half.py").write_text(patched)
        found = changed_doctests(tree_changes(a, b), frozenset({"half.py"}))
        assert [w for w in want if not any(w in f for f in found)] == [] and bool(found) == bool(want), (name, found)


def test_the_spelling_rules_leave_the_base_style_getattr_to_the_constructs(tmp_path: Path) -> None:
    from patcher.verify.judges.constructs.probes import find_probes
    more = VISITOR + ("\n    def visit_pair(self, node):\n"
                      "        return [getattr(self, 'visit_' + n.kind)(n) for n in node.items]\n")
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    (tmp_path / "a/v.py").write_text(VISITOR)
    (tmp_path / "b/v.py").write_text(more)
    changes = tree_changes(tmp_path / "a", tmp_path / "b")
    assert find_probes(changes) == [] and find_constructs(changes) == []
