"""The second judge: `python -S FLAGS patcher_judge.py JOBFILE`, started by the tool server (sandbox/judging.py).

Runs named tests with no test framework: the test module loaded from its file (its `import pytest` gets
standin.py, which is never put in sys.modules), plain functions, methods of plain classes, and
`unittest.TestCase` methods (`setUp`/`tearDown`, cleanups) called directly; the module's and the conftest
files' fixtures (autouse and `usefixtures` ones too), `tmp_path`, `monkeypatch`, `capsys`, a small `request`
and `mark.parametrize` provided (provide.py). A test that needs more (a plugin's fixture, `xfail`, a fixture
with params, a conftest that hooks how tests run, a coroutine) is reported `unjudged`, never run.

The process started is the keeper (keeper.py): it forks the child that runs repository code (child.py, one
process per group of cases, in the run's context: context.py) before it reads the key, checks what the child
writes (accept.py) and signs it on an inherited fd, as the harness does (harness/patcher_channel.py). The
test modules' comparisons are captured (values.py) and, where the job says so, the diff's lines are watched
(observe.py). Standard library only; Python 3.9 to 3.13; it imports no test framework (not even unittest:
TestCase is recognised by name).
"""

from __future__ import annotations  # `str | None` in signatures; a box may run Python 3.9

import builtins
import importlib
import importlib.util
import inspect
import json
import os
import pathlib
import sys
import tempfile
import types
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


_SIBLINGS: list[Any] = []
"""Every module of this folder the judge loaded (the runtime judge watches their namespaces)."""


def _sibling(file: str, name: str) -> Any:
    """A module of this folder, run from its file under `name` and kept out of sys.modules (as standin is)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _SIBLINGS.append(module)
    return module


def _first(base: str) -> None:
    """`base` first on sys.path, as pytest's prepend import mode puts a test's root there even where it is on the
    path already (at its end, for a flat layout): the repository's own `test` package wins over the standard
    library's (mako's `from test import assert_raises`)."""
    if not sys.path or sys.path[0] != base:
        sys.path.insert(0, base)


_cases = _sibling("cases.py", "_patcher_judge_cases")
Unjudged, marks, is_testcase, testcase, parametrized = (
    _cases.Unjudged, _cases.marks, _cases.is_testcase, _cases.testcase, _cases.parametrized)
_STEPS = ("setup_method", "teardown_method")


class Judge:
    def __init__(self, root: str, tmp: str) -> None:
        self.root, self.tmp = root.rstrip("/"), tmp
        fixtures = _sibling("fixtures.py", "_patcher_judge_fixtures")
        self.provide = _sibling("provide.py", "_patcher_judge_provide")
        self.scope: list[Any] = []
        self.standin = _sibling("standin.py", "pytest")
        for name in ("MonkeyPatch", "CaptureFixture", "CaptureResult"):
            setattr(self.standin, name, getattr(fixtures, name))
        self.builtins = {**builtins.__dict__, "__import__": self._import}
        self.conftests: dict[str, Any] = {}
        self.modules: dict[tuple[str, str], Any] = {}
        self.compare: Callable[..., Any] | None = None
        """Called for each comparison in a test module (values.py); None: the module's code as written."""
        self.wrap_case: Callable[[Any], None] = lambda case: None
        self.rewrite: Callable[[str, str], Any] | None = None

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        """`import pytest` in a test module or conftest: the stand-in; anything else as usual."""
        if level == 0 and (name == "pytest" or name.startswith("pytest.")):
            return self.standin
        return builtins.__import__(name, globals, locals, fromlist, level)

    def load(self, path: str, source: str | None) -> Any:
        """The test module (`source` in place of the file's text for a variant), named as pytest names it."""
        text = source if source is not None else pathlib.Path(path).read_text(encoding="utf-8")
        self.scope = self._conftests(os.path.dirname(path))
        if (path, text) in self.modules:
            return self.modules[(path, text)]
        name, base = module_name(path)
        _first(base)
        if "." in name:
            importlib.import_module(name.rpartition(".")[0])
        module = self._exec(name, path, text, captured=True)
        self.modules[(path, text)] = module
        return module

    def _exec(self, name: str, path: str, text: str, captured: bool = False) -> Any:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__builtins__"] = self.builtins
        sys.modules[name] = module
        if captured and self.compare is not None and self.rewrite is not None:
            module.__dict__["@patcher_compare"] = self.compare
            code = self.rewrite(text, path)
        else:
            code = compile(text, path, "exec", dont_inherit=True)
        exec(code, module.__dict__)
        return module

    def _conftests(self, folder: str) -> list[Any]:
        """The conftest files from the root down to the test's folder, run as pytest would before the module (and
        returned, the root's first); one that does not load, or that hooks how tests run, makes the folder's tests
        unjudged."""
        rel = os.path.relpath(folder, self.root)
        parts = [] if rel == "." else rel.split(os.sep)
        for n in range(len(parts) + 1):
            path = os.path.join(self.root, *parts[:n], "conftest.py")
            if path in self.conftests or not os.path.isfile(path):
                if isinstance(self.conftests.get(path), Unjudged):
                    raise self.conftests[path]
                continue
            try:
                name, base = module_name(path)
                _first(base)
                text = pathlib.Path(path).read_text(encoding="utf-8")
                module = self._exec(name if "." in name else f"conftest_{n}", path, text)
            except Exception as e:
                self.conftests[path] = Unjudged(f"{path[len(self.root) + 1:]} does not load outside pytest "
                                                f"({type(e).__name__})")
                raise self.conftests[path] from None
            hooks = [k for k in vars(module) if k.startswith(("pytest_runtest", "pytest_pyfunc", "pytest_plugins"))]
            if hooks:
                self.conftests[path] = Unjudged(f"{path[len(self.root) + 1:]} has a hook {hooks[0]}")
                raise self.conftests[path]
            self.conftests[path] = module
        return [m for n in range(len(parts) + 1)
                if isinstance(m := self.conftests.get(os.path.join(self.root, *parts[:n], "conftest.py")),
                              types.ModuleType)]

    def run(self, node: str, source: str | None) -> dict[str, Any]:
        """One test by pytest node id: {"outcome": passed|failed|skipped|unjudged, ...}."""
        try:
            call, cleanup = self._prepare(node, source)
        except Unjudged as e:
            return {"outcome": "unjudged", "why": str(e)}
        except BaseException as e:  # the module does not import: the test fails, as far as this judge knows
            return self._failed(e)
        outcome: dict[str, Any] = {"outcome": "passed"}
        try:
            call()
        except BaseException as e:
            outcome = self._failed(e)
        for undo in reversed(cleanup):
            try:
                undo()
            except BaseException as e:
                if outcome["outcome"] == "passed":
                    outcome = self._failed(e)
        return outcome

    def _failed(self, e: BaseException) -> dict[str, Any]:
        if type(e).__name__ in ("SkipTest", "Skipped"):
            return {"outcome": "skipped", "why": str(e)[:200]}
        return {"outcome": "failed", "exc": type_name(type(e)), "frames": self.frames(e.__traceback__),
                "message": str(e)[:300]}

    def _prepare(self, node: str, source: str | None) -> tuple[Callable[[], None], list[Callable[[], None]]]:
        rel, *names = node.split("::")
        if not names:
            raise Unjudged("not a test function")
        names[-1], _, param_id = names[-1].partition("[")
        module = self.load(os.path.join(self.root, rel), source)
        owners: list[Any] = [module]
        for n in names[:-1]:
            owners.append(getattr(owners[-1], n))
        owner = owners[-1]
        if names[:-1] and is_testcase(owner):
            return testcase(owner, names[-1], self.wrap_case), []
        func = getattr(owner, names[-1])
        marked = [m for o in [*owners, func] for m in marks(o)]
        if any(m.name == "xfail" for m in marked):
            raise Unjudged("the test is marked xfail")
        if inspect.iscoroutinefunction(func) or getattr(func, "__unittest_expecting_failure__", False):
            raise Unjudged("a coroutine or expected-failure test")
        cleanup: list[Callable[[], None]] = []
        provider = self.provide.Provider(self, Unjudged, fixtures_of, [module, *reversed(self.scope)], node, cleanup)
        inst = owner() if names[:-1] else None
        bound = getattr(inst, names[-1]) if inst is not None else func
        used = [str(a) for m in marked if m.name == "usefixtures" for a in m.args]
        args = provider.arguments(func, parametrized(func, param_id.rstrip("]") if param_id else None), used)
        setups = [(getattr(inst, s, None), s) for s in _STEPS] if inst is not None else [
            (getattr(module, s, None), s) for s in ("setup_function", "teardown_function")]
        if setups[0][0] is not None:
            setups[0][0](bound)
        if setups[1][0] is not None:
            cleanup.insert(0, lambda: setups[1][0](bound))  # type: ignore[misc]
        return (lambda: bound(**args)), cleanup

    def frames(self, tb: Any, limit: int = 60) -> list[list[str]]:
        out: list[list[str]] = []
        prefix = self.root + "/"
        while tb is not None and len(out) < limit:
            code = tb.tb_frame.f_code
            if code.co_filename.startswith(prefix):
                out.append([code.co_filename[len(prefix):], code.co_name])
            tb = tb.tb_next
        return out


def module_name(path: str) -> tuple[str, str]:
    """(dotted name, import root) as pytest's default import mode names a file: up through __init__.py."""
    folder, name = os.path.split(path[:-3])
    parts = [name]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, pkg = os.path.split(folder)
        parts.insert(0, pkg)
    return ".".join(parts), folder


def fixtures_of(module: Any) -> dict[str, Any]:
    defs = [getattr(v, "_judge_fixture", None) for v in list(vars(module).values())]
    return {d.name: d for d in defs if d is not None and hasattr(d, "autouse")}


def type_name(exc_type: type) -> str:
    mod = exc_type.__module__
    return exc_type.__qualname__ if mod == "builtins" else f"{mod}.{exc_type.__qualname__}"


def main() -> int:
    fresh = sys.argv[1] == "--fresh"  # the bare context's child, in an interpreter of its own (see _fresh)
    path = sys.argv[2] if fresh else sys.argv[1]
    with open(path, encoding="utf-8") as f:
        job = json.load(f)
    os.unlink(path)
    parts = {n: _sibling(f"{n}.py", f"_patcher_judge_{n}") for n in
             ("keeper", "accept", "child", "context", "roots", "reads", "observe", "tracer", "operands", "strangers",
              "values", "group")}
    keeper, accept, child, operands = parts["keeper"], parts["accept"], parts["child"], parts["operands"]
    context = job.get("context") or {}

    def zygote(out_fd: int, ack_fd: int) -> None:
        child.zygote(job, out_fd, ack_fd, lambda: parts["context"].enter(context),
                     lambda state, group, cases, send: parts["group"].run_group(
                         state, job, cases, send, Judge, parts, _SIBLINGS))

    if fresh:
        zygote(int(sys.argv[3]), int(sys.argv[4]))

    def start_child(out_fd: int, ack_fd: int) -> None:
        if context.get("fresh"):
            _fresh(job, os.path.dirname(path), child, out_fd, ack_fd)
        zygote(out_fd, ack_fd)

    state = accept.Accept(job, lambda op, a, b: operands.OPS[op](a, b), operands.decode)
    return int(keeper.keep(job, start_child, state))


def _fresh(job: dict[str, Any], folder: str, child: Any, out_fd: int, ack_fd: int) -> None:
    """The child as an application's process is: a new interpreter started with no flags (the keeper's -S, -E
    and -s are flags production never has, and sys.flags cannot be unset), its site run as Python runs it. It
    gets the job from a file of its own and the keeper's pipes; the key's stdin is sealed off first."""
    child.seal((out_fd, ack_fd))
    fd, path = tempfile.mkstemp(dir=folder, suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(job, f)
    for kept in (out_fd, ack_fd):
        os.set_inheritable(kept, True)
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), "--fresh", path, str(out_fd),
                               str(ack_fd)], dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
