"""The crash's own argument values, recorded on the base (patcher_heldout.py, mode `record`).

The fail-to-pass tests run under pytest in this process; while each runs, a trace hook notes every call of a
repository function that is not a test's (its arguments, copied when small containers, at the call), and every
frame an exception passes through. When a test fails, its record holds the frames the failing exception passed
through, innermost first (each with the name its function can be called by again and its arguments as plain
data), every call the test made into those functions, and the calls the test made itself into the repository
(an assertion's failure has no crash frames: its inputs are those). Lines are not traced (f_trace_lines off):
the hook costs one Python call per call of repository code. Standard library and pytest only; loaded from its
file, never put in sys.modules.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

CO_GENERATOR = 0x20
CO_ASYNC = 0x80 | 0x200
"""A coroutine or an async generator: its frame runs under an event loop, not asked inside the run."""
BUDGET = 400
"""Parts an argument's encoding may have (past it, opaque): every call of the repository's code is encoded."""
MAX_CALLS = 12
"""Calls kept per function (the first ones), and calls of the test itself."""
MAX_EXCEPTIONS = 256
TEST_NAMES = ("test_", "conftest.py")


class Seen:
    """One call of a repository function: its code, module, arguments as bound at the call (encoded there: no
    reference to them is kept, so the recording leaves a weak reference's object to die as it would), and how many
    calls of that code came before it in the test."""

    __slots__ = ("args", "code", "module", "n")

    def __init__(self, code: Any, module: str | None, args: list[tuple[str, str, Any]], n: int) -> None:
        self.code, self.module, self.args, self.n = code, module, args, n


class Recorder:
    def __init__(self, root: str, test_files: list[str], names: Any, plain: Any) -> None:
        self.root = root.rstrip("/") + "/"
        self.tests = set(test_files)
        self.names, self.plain = names, plain
        self.kinds: dict[str, int] = {}
        self.reset()

    def reset(self) -> None:
        self.calls: dict[Any, list[Seen]] = {}
        self.counts: dict[Any, int] = {}
        self.direct: list[Seen] = []
        self.raised: dict[int, tuple[BaseException, list[Seen]]] = {}

    def kind(self, filename: str) -> int:
        """0: not the repository's; 1: its source; 2: a test of it."""
        got = self.kinds.get(filename)
        if got is None:
            rel = filename[len(self.root):] if filename.startswith(self.root) else ""
            base = os.path.basename(rel)
            if not rel.endswith(".py") or "site-packages" in rel:
                got = 0
            elif rel in self.tests or base.startswith(TEST_NAMES) or base.endswith("_test.py"):
                got = 2
            else:
                got = 1
            self.kinds[filename] = got
        return got

    def hook(self, frame: Any, event: str, arg: Any) -> Callable[..., Any] | None:
        if event != "call" or self.kind(frame.f_code.co_filename) != 1:
            return None
        n = self.counts.get(frame.f_code, 0)
        self.counts[frame.f_code] = n + 1
        args = [(name, kind, self.plain.encode(value, budget=BUDGET))
                for name, kind, value in self.names.arguments(frame)]
        seen = Seen(frame.f_code, frame.f_globals.get("__name__"), args, n)
        kept = self.calls.setdefault(frame.f_code, [])
        if len(kept) < MAX_CALLS:
            kept.append(seen)
        caller = frame.f_back
        if caller is not None and self.kind(caller.f_code.co_filename) == 2 and len(self.direct) < MAX_CALLS:
            self.direct.append(seen)
        frame.f_trace_lines = False

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "exception":
                self.passed(arg[1], seen)
            return local
        return local

    def passed(self, exc: BaseException, seen: Seen) -> None:
        entry = self.raised.get(id(exc))
        if entry is None or entry[0] is not exc:
            if len(self.raised) >= MAX_EXCEPTIONS:
                del self.raised[next(iter(self.raised))]
            entry = self.raised[id(exc)] = (exc, [])
        if all(s is not seen for s in entry[1]):
            entry[1].append(seen)

    def report(self, exc: BaseException | None) -> dict[str, Any]:
        """What the test showed: the crash frames, innermost first; the calls into their functions; the test's
        own calls into the repository."""
        entry = self.raised.get(id(exc)) if exc is not None else None
        chain = entry[1] if entry is not None and entry[0] is exc else []
        frames = [self.frame(s) for s in chain]
        codes = list(dict.fromkeys([s.code for s in chain] + [s.code for s in self.direct]))
        calls = {self.key(c): [self.call(s)[0] for s in self.calls.get(c, [])] for c in codes}
        direct = [self.frame(s) for s in self.direct]
        return {"frames": frames, "calls": calls, "direct": direct}

    def key(self, code: Any) -> str:
        return f"{code.co_filename[len(self.root):]}:{code.co_firstlineno}:{code.co_name}"

    def frame(self, seen: Seen) -> dict[str, Any]:
        """A function the test ran: how to call it again by name with plain data (`target`, `call`, or why not),
        and the whole call as the function's parameters took it (`full`, what is not plain data opaque), with how
        many calls of it came before (`n`): what the held-out judge asks inside the test's own run."""
        code = seen.code
        target, why = self.names.target_of(code, seen.module)
        call, bad = self.call(seen, target)
        return {"key": self.key(code), "file": code.co_filename[len(self.root):], "func": code.co_name,
                "first": code.co_firstlineno, "target": target if call is not None else None,
                "why": why or bad, "call": call, "full": _form(seen.args, "function"), "n": seen.n,
                "qualname": str(getattr(code, "co_qualname", "") or (target or {}).get("qualname") or code.co_name),
                "generator": bool(code.co_flags & CO_GENERATOR), "coroutine": bool(code.co_flags & CO_ASYNC)}

    def call(self, seen: Seen, target: dict[str, str] | None = None) -> tuple[dict[str, Any] | None, str]:
        """The call as plain data ({"pos", "kw"}), or None and why not."""
        got = _form(seen.args, (target or {}).get("kind", "function"))
        bad = [e for e in got["pos"] + [e for _, e in got["kw"]] if not self.plain.exact(e)]
        if bad:
            return None, "an argument is not plain data (" + (bad[0][1] if bad[0][0] == "?" else "inside it") + ")"
        return got, ""


def _form(args: list[tuple[str, str, Any]], kind: str) -> dict[str, Any]:
    """The encoded arguments as a call by position and keyword: positional
    parameters, then the extra positional ones; keyword-only, then the extra keywords. A class method's `cls` is
    left out (it is called through its class)."""
    pos: list[Any] = []
    kw: list[list[Any]] = []
    for name, how, enc in args:
        if how == "p":
            pos.append(enc)
        elif how == "k":
            kw.append([name, enc])
        elif how == "*" and enc[0] == "t":
            pos.extend(enc[1])
        elif how == "**" and enc[0] == "d":
            kw.extend([str(k[1]), v] for k, v in enc[1] if k[0] == "s")
        else:
            pos.append(enc)  # extra arguments too big to be plain data: opaque, so the call is not exact
    return {"pos": pos[1:] if kind == "class" else pos, "kw": kw}


def loaded(root: str) -> list[str]:
    """The modules loaded now that are neither the repository's nor the judge's or the harness's (their files
    are elsewhere), in the order they were loaded: what the calling processes load first (calls.py)."""
    ours = (root.rstrip("/") + "/", os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/")
    kept = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if name.startswith(("_patcher", "patcher_", "__")) or name in ("sitecustomize", "usercustomize"):
            continue
        if isinstance(where, str) and os.path.abspath(where).startswith(ours):
            continue
        kept.append(name)
    return kept


def run(job: dict[str, Any], emit: Callable[[dict[str, Any]], None], names: Any, plain: Any) -> None:
    """Each test of job["tests"] (pytest node ids) under pytest, in the tree at job["root"] (the working directory)."""
    import pytest

    rec = Recorder(job["root"], list(job.get("test_files") or []), names, plain)

    class Plugin:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item: Any) -> Any:
            rec.reset()
            threading.settrace(rec.hook)
            sys.settrace(rec.hook)
            try:
                yield
            finally:
                sys.settrace(None)
                threading.settrace(None)  # type: ignore[arg-type]

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            yield  # after pytest's own: a unittest case's failure reaches `call` only there
            if call.when != "call":
                return
            exc = call.excinfo.value if call.excinfo is not None else None
            shown = {"k": "test", "id": item.nodeid, "outcome": "failed" if exc is not None else "passed"}
            if exc is not None:
                shown.update(exc=names.type_name(type(exc)), message=str(exc)[:300], loaded=loaded(job["root"]))
            emit({**shown, **rec.report(exc)})

    args = ["-q", "-p", "no:cacheprovider", "--rootdir", job["root"], *job["tests"]]
    pytest.main(args, plugins=[Plugin()])
