"""One group of cases in a process of its own (child.py forks it): the judge, the values and, where the job says
so, the observer of the diff's lines, wired together; then each case run and its outcome sent.

The runtime judge compares by identity, around each call into the diff's code, the namespaces a fix has no
business writing to: the judge's own modules and classes (this folder's), the test modules (and conftests)
with their classes, and, in a run dressed as pytest's, the test framework's modules, classes and sys.modules
entries. Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import os
import types
from typing import Any, Callable

_HERE = os.path.dirname(os.path.abspath(__file__))


def run_group(state: Any, job: dict[str, Any], cases: list[dict[str, Any]], send: Callable[[dict[str, Any]], None],
              judge_class: Any, parts: dict[str, Any], siblings: list[Any]) -> None:
    current: list[Any] = [None]
    me = os.getpid()

    def emit(record: dict[str, Any]) -> None:
        if os.getpid() == me:  # not from a process a test forked: its comparisons are not this run's record
            send({**record, "id": current[0]})

    tree = str(cases[0].get("tree") or "base")
    root = (job.get("roots") or {"base": job.get("root")})[tree]
    workspace = str(job.get("workspace") or "")
    parts["roots"].take(root, workspace)
    parts["context"].tree(state, root)
    judge = judge_class(root, job["tmp"])
    judge.standin.approx = parts["operands"].approx
    watch = (job.get("observe") or {}).get(tree) if (job.get("context") or {}).get("observe") else None
    observer = None
    if watch:
        copies = tuple(str(r) for r in [*(job.get("roots") or {}).values(), workspace] if r and r != root)
        observer = parts["observe"].Observer(emit, root, watch.get("lines") or {}, watch.get("tests") or [],
                                             [os.path.dirname(_HERE)], state.parents, parts["reads"], copies)
    tracer = parts["tracer"].Tracer(observer) if observer else None
    own = frozenset(v for m in siblings for v in list(vars(m).values())
                    if isinstance(v, type) and v.__module__ == m.__name__)
    values = parts["values"].Values(emit, observer.is_diff if observer else None, tracer.probe if tracer else None,
                                    root, parts["operands"], parts["strangers"], own, Named(judge))
    judge.compare, judge.wrap_case, judge.rewrite = values.compare, values.wrap, parts["values"].rewrite
    if observer is not None and tracer is not None:
        tracer.watched = Watched(judge, [judge, values], siblings, parts["context"], state.dressed).now
        if state.framework is not None:
            state.framework.adopt = tracer.adopt
        observer.install()
        tracer.install()
    for case in cases:
        current[0] = case["id"]
        send({"k": "start", "id": case["id"]})
        with parts["context"].Case(state, case["test"]):
            got = judge.run(case["test"], case.get("source"))
        escaped = parts["roots"].escaped(workspace)
        send({"k": "test", "id": case["id"], **got, **({"escaped": escaped[:20]} if escaped else {})})


class Watched:
    """The namespaces the diff's code must leave alone, as (label, mapping) pairs; rebuilt as test modules load."""

    def __init__(self, judge: Any, instances: list[Any], siblings: list[Any], context: Any, dressed: bool) -> None:
        self.judge, self.instances, self.siblings = judge, instances, siblings
        self.context, self.dressed = context, dressed
        self.key: tuple[int, int] = (-1, -1)
        self.cached: list[tuple[str, Any]] = []

    def now(self) -> list[tuple[str, Any]]:
        key = (len(self.judge.modules), len(self.siblings))
        if key != self.key:
            self.key, self.cached = key, self._build()
        return self.cached

    def _build(self) -> list[tuple[str, Any]]:
        spaces: list[tuple[str, dict[str, Any]]] = [("judge", type(self.judge).run.__globals__)]
        modules = list(self.siblings) + list(self.judge.modules.values())
        modules += [m for m in self.judge.conftests.values() if isinstance(m, types.ModuleType)]
        if self.dressed:
            modules += self.context.framework_modules()
        spaces += [(str(getattr(m, "__name__", "?")), vars(m)) for m in modules]
        out: list[tuple[str, Any]] = []
        for name, space in spaces:
            out.append((name, space))
            out += [(f"{name}.{k}", v.__dict__) for k, v in list(space.items())
                    if isinstance(v, type) and v.__module__ == space.get("__name__")]
        out += [(type(i).__name__ + "()", i.__dict__) for i in self.instances]
        if self.dressed:
            out.append(("sys.modules", self.context.Keys()))
        return out


class Named:
    """Whether a test module names a value: among its globals, or the globals of a module it imports (two levels:
    `mock.ANY`, `unittest.mock.ANY`)."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def __call__(self, value: Any) -> bool:
        spaces = [vars(m) for m in list(self.judge.modules.values())]
        for depth in range(3):
            if any(v is value for space in spaces for v in list(space.values())):
                return True
            spaces = [vars(v) for space in spaces for v in list(space.values())
                      if isinstance(v, types.ModuleType)][:200] if depth < 2 else []
        return False
