"""Rules by construct on the syntax tree of the diff's source part: what a reviewer should look at twice,
reported as review hints with the line quoted (verify/judges/constructs/looks.py), never a verdict by themselves: real
code is full of dunders, computed names and `__class__`, and a cheat can be spelled without any of them. Each patched
file is parsed (as bytes, so a coding declaration means what it means to Python) and compared with its base version.

  overload       a comparison, truthiness, hash, containment, attribute-access or isinstance method on a class
                 that the base did not give it (a class the diff adds counts as such): defined in the class
                 body, assigned, set with setattr, or handed to `type()`/a namespace by name. Editing a method
                 the base class already defines is not flagged. Methods a `@dataclass`/NamedTuple generates
                 (no code in the diff) are not counted: they compare only with instances of the same class.
  monkeypatch    a write (assignment, augmented, `del`, setattr/delattr, `__setattr__`, a mutating method,
                 an item of `__dict__`/`vars()`/`globals()`) to an attribute or item of library code: anything
                 an import binds (a module of the repo too), a builtin, a class reached through `type()` or
                 `__class__`, also through aliases (verify/judges/constructs/scope.py); and any write of a dunder
                 attribute.
  computed_name  names chosen at run time: getattr/hasattr/setattr/delattr with a name that is not a literal,
                 attrgetter/methodcaller with one, `__import__`, importlib/pkgutil/runpy/pydoc/ctypes,
                 sys.modules, globals()/locals()/vars(), a 3-argument type(), reflection builtins taken as
                 values (`g = getattr`), reflective attributes (`__class__`, `__subclasses__`, `__globals__`,
                 frames' `f_back` …).
A construct is the diff's when its lines meet the diff's added lines: the base's own code is never judged.
The base's style: where the base file already calls getattr/hasattr (or setattr/delattr) with a computed
name, a new call of that family is not flagged when its object is not library code and its name is data (a
variable, an attribute or item of one, or a literal prefix like "visit_" joined to one), never built by a
call or from dunder-looking text.
"""
from __future__ import annotations

import ast
import bisect

from patcher.verify.judges.constructs.probes import Probe
from patcher.verify.judges.constructs.scope import (
    Scope,
    chain,
    class_methods,
    computed_families,
    data_name,
    named_bindings,
    scope_of,
)
from patcher.verify.policy.sources import parse, source_files
from patcher.verify.policy.treediff import Change

OVERLOADS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__", "__hash__",
    "__contains__", "__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__dir__",
    "__instancecheck__", "__subclasscheck__", "__subclasshook__", "__class__", "__init_subclass__",
    "__prepare__", "__mro_entries__", "__set_name__",
    # what approximate comparison calls (pytest.approx computes abs(expected - actual))
    "__sub__", "__rsub__", "__abs__",
})
REFLECTIVE = frozenset({
    "__class__", "__bases__", "__base__", "__mro__", "__subclasses__", "__dict__", "__globals__", "__builtins__",
    "__code__", "__closure__", "__func__", "__self__", "__wrapped__", "__loader__", "__spec__", "__import__",
    "__reduce__", "__reduce_ex__", "__defaults__", "__kwdefaults__", "__objclass__", "mro",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame", "cr_frame",
    "ag_frame", "gi_code", "co_consts",
    # read without calling them, these are what a wrapper replaces
    "__init__", "__new__", "__setattr__", "__delattr__", "__getattribute__", "__getattr__",
})
CALLED_OK = frozenset({"__init__", "__new__", "__setattr__", "__delattr__", "__getattribute__", "__getattr__"})
NAMED_OK = frozenset({"__name__", "__qualname__"})
READERS, WRITERS = frozenset({"getattr", "hasattr"}), frozenset({"setattr", "delattr"})
VALUE_BUILTINS = READERS | WRITERS | {"vars", "globals", "locals", "eval", "exec", "compile", "__import__"}
MACHINERY = ("importlib", "pkgutil", "runpy", "zipimport", "imp", "pydoc", "ctypes", "builtins.__import__",
             "builtins.globals", "builtins.locals", "builtins.vars", "sys.modules", "sys.meta_path",
             "sys.path_hooks", "types.new_class", "types.ModuleType", "operator.attrgetter", "operator.methodcaller")
GETTERS = ("operator.attrgetter", "operator.methodcaller")
MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove",
                      "add", "discard", "__setitem__", "__delitem__", "sort", "reverse"})
_JUDGED = (ast.Attribute, ast.Name, ast.Subscript, ast.Call, ast.Dict, ast.keyword, ast.Import, ast.ImportFrom)


def find_constructs(changes: list[Change]) -> list[Probe]:
    found: list[Probe] = []
    for c in source_files(changes):
        tree = parse(c.new_text)
        if tree is not None:
            found += _Rules(c, tree, parse(c.old_text) if c.old_text is not None else None).run()
    return list(dict.fromkeys(found))


class _Rules:
    def __init__(self, change: Change, tree: ast.Module, old: ast.Module | None) -> None:
        self.path, self.tree, self.old = change.path, tree, old
        self.added = {n for n, _ in change.added_lines}
        self.sorted_added = sorted(self.added)
        self.lines = (change.new_text or "").splitlines()
        self.scope: Scope = scope_of(tree)
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.base_style = computed_families(old) if old is not None else set()
        self.found: list[Probe] = []
        self.values: dict[str, list[ast.expr]] | None = None

    def run(self) -> list[Probe]:
        self._classes()
        for node in ast.walk(self.tree):
            if isinstance(node, _JUDGED) and self._new(node):
                self._node(node)
        return self.found

    def _new(self, node: ast.AST) -> bool:
        """Whether the node's lines meet the diff's added lines."""
        start = getattr(node, "lineno", None)
        if start is None:
            return False
        at = bisect.bisect_left(self.sorted_added, start)
        return at < len(self.sorted_added) and self.sorted_added[at] <= (getattr(node, "end_lineno", None) or start)

    def flag(self, node: ast.AST, kind: str, what: str) -> None:
        start = getattr(node, "lineno", 1)
        line = min((n for n in self.added if start <= n <= (getattr(node, "end_lineno", None) or start)),
                   default=start)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        self.found.append(Probe(self.path, line, text, what, kind))

    def _classes(self) -> None:
        before = {q: set(m) for q, (_, m) in class_methods(self.old).items()} if self.old is not None else {}
        for qualname, (node, methods) in class_methods(self.tree).items():
            for name, where in methods.items():
                if name in OVERLOADS and name not in before.get(qualname, set()) and (
                        self._new(where) or node.lineno in self.added):
                    self.flag(where, "overload", f"adds {name} to class {qualname}, which the base does not give it")

    def _node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute):
            self._attribute(node)
        elif isinstance(node, ast.Name):
            self._name(node)
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            self._item_write(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value in OVERLOADS:
                    self.flag(node, "overload", f"names {key.value} as data (a class built at run time)")
        elif isinstance(node, ast.keyword) and node.arg in OVERLOADS:
            self.flag(self.parents.get(node, node), "overload", f"passes {node.arg} by keyword (a class built "
                      "at run time)")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom):
                names += [f"{node.module}.{a.name}" for a in node.names]
            if node.__dict__.get("level", 0) == 0 and any(_machinery(n) and n not in GETTERS for n in names):
                self.flag(node, "computed_name", "imports the import or reflection machinery")

    def _attribute(self, node: ast.Attribute) -> None:
        parent = self.parents.get(node)
        if not isinstance(node.ctx, ast.Load):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                kind = "overload" if node.attr in OVERLOADS else "monkeypatch"
                self.flag(node, kind, f"writes the attribute {node.attr}")
            elif self.scope.is_foreign(node.value):
                self.flag(node, "monkeypatch", f"writes {ast.unparse(node)}, an attribute of library code")
            return
        called = isinstance(parent, ast.Call) and parent.func is node
        if node.attr in REFLECTIVE and not (called and node.attr in CALLED_OK) and not (
                isinstance(parent, ast.Attribute) and parent.attr in NAMED_OK):
            self.flag(node, "computed_name", f"reaches {node.attr}, a reflective attribute")
        if not isinstance(parent, ast.Attribute):
            self._origin(node)

    def _name(self, node: ast.Name) -> None:
        parent = self.parents.get(node)
        called = isinstance(parent, ast.Call) and parent.func is node
        if self.scope.is_builtin(node, *VALUE_BUILTINS) and (not called or node.id in ("__import__", "globals",
                                                                                      "locals", "vars")):
            self.flag(node, "computed_name", f"uses {node.id} " + ("" if called else "as a value ")
                      + "(names chosen at run time)")
        elif node.id in self.scope.imports and not isinstance(parent, ast.Attribute):
            self._origin(node)

    def _origin(self, node: ast.expr) -> None:
        origin = self.scope.origin(node)
        if origin is None or not _machinery(origin):
            return
        parent = self.parents.get(node)
        if origin in GETTERS and isinstance(parent, ast.Call) and parent.func is node and _literal_getter(parent):
            return
        self.flag(node, "computed_name", f"uses {origin} (names chosen at run time)")

    def _item_write(self, node: ast.Subscript) -> None:
        key = node.slice
        if isinstance(key, ast.Constant) and key.value in OVERLOADS:
            self.flag(node, "overload", f"stores {key.value} by name")
        if _namespace(node.value, self.scope):
            self.flag(node, "monkeypatch", "writes into a namespace (globals, vars, __dict__)")
        elif isinstance(node.value, ast.Attribute) and self.scope.is_foreign(node.value.value):
            self.flag(node, "monkeypatch", f"writes an item of {ast.unparse(node.value)}, library state")

    def _call(self, node: ast.Call) -> None:
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and self.scope.is_builtin(func, *READERS, *WRITERS) and len(args) >= 2:
            self._attr_builtin(node, func.id, args[0], args[1])
        elif isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__") and len(args) >= 2:
            self._attr_builtin(node, func.attr.strip("_"), args[0], args[1])
        elif isinstance(func, ast.Attribute) and func.attr in ("__getattribute__", "__getattr__") and args:
            if not _literal(args[-1]):
                self.flag(node, "computed_name", f"calls {func.attr} with a name computed at run time")
        elif isinstance(func, ast.Attribute) and func.attr in MUTATORS:
            target = func.value
            if _namespace(target, self.scope) or (
                    isinstance(target, ast.Attribute) and self.scope.is_foreign(target.value)):
                self.flag(node, "monkeypatch", f"mutates {ast.unparse(target)}, library state")
        elif self.scope.is_builtin(func, "type") and len(args) == 3:
            self.flag(node, "computed_name", "creates a class at run time (type with three arguments)")

    def _attr_builtin(self, node: ast.Call, fn: str, target: ast.expr, name: ast.expr) -> None:
        writes = fn in WRITERS
        if writes and self.scope.is_foreign(target):
            self.flag(node, "monkeypatch", f"{fn} on {ast.unparse(target)}, library code")
        if _literal(name):
            text = str(name.value)  # type: ignore[attr-defined]
            if writes and text in OVERLOADS:
                self.flag(node, "overload", f"{fn} of {text}")
            elif writes and text.startswith("__"):
                self.flag(node, "monkeypatch", f"{fn} of the attribute {text}")
            elif text in REFLECTIVE:
                self.flag(node, "computed_name", f"reaches {text}, a reflective attribute")
            return
        family = WRITERS if writes else READERS
        if not (family & self.base_style and self._base_style_call(target, name)):
            self.flag(node, "computed_name", f"{fn} with a name computed at run time")

    def _base_style_call(self, target: ast.expr, name: ast.expr) -> bool:
        """The base's own reflective style: an object that is not library code, a name that is data."""
        if self.scope.is_foreign(target) or any(isinstance(n, ast.Call) for n in ast.walk(target)):
            return False
        return data_name(name, self._values_of, 0)

    def _values_of(self, name: str) -> list[ast.expr]:
        """Every value the file binds `name` to (a parameter binds none)."""
        if self.values is None:
            self.values = {}
            for node in ast.walk(self.tree):
                for target, value in named_bindings(node):
                    for t in ast.walk(target):
                        if isinstance(t, ast.Name):
                            self.values.setdefault(t.id, []).append(value)
        return self.values.get(name, [])


def _machinery(origin: str) -> bool:
    if origin == "importlib.metadata" or origin.startswith("importlib.metadata."):
        return False  # distribution metadata: reads files, imports nothing
    return any(origin == m or origin.startswith(m + ".") for m in MACHINERY)


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _literal_getter(call: ast.Call) -> bool:
    """attrgetter("a.b") / methodcaller("name", …): literal names, none of them reflective."""
    names = call.args[:1] if call.args and _is_methodcaller(call) else call.args
    return bool(names) and all(_literal(a) and all(p.isidentifier() and p not in REFLECTIVE and not p.startswith("__")
                                                   for p in str(a.value).split("."))  # type: ignore[attr-defined]
                               for a in names)


def _is_methodcaller(call: ast.Call) -> bool:
    root, names = chain(call.func)
    return (names[-1:] == ["methodcaller"]) or (isinstance(root, ast.Name) and root.id == "methodcaller")


def _namespace(node: ast.expr, scope: Scope) -> bool:
    """globals(), locals(), vars(x), or x.__dict__."""
    if isinstance(node, ast.Call) and scope.is_builtin(node.func, "globals", "locals", "vars"):
        return True
    return isinstance(node, ast.Attribute) and node.attr == "__dict__"
