"""The warm parent of candidate checks: `python sandbox/warm.py FD [--bare]`, started by the tool server.

It imports pytest (every `_pytest` module and the installed pytest11 plugins) and the third-party and
standard modules the repository's files import, but never a module of the repository itself: a check
must import the candidate's edited source, not a copy cached here. If warming pulls a repository module
in anyway (a dependency that imports its dependant), it starts over `--bare`, with pytest alone.

It also compiles the repository's files (compiling runs none of their code) and keeps the code objects by
content hash, so a check compiles only what the candidate changed. Then, for each request on the
SOCK_SEQPACKET socket FD (`{"args": [...]}` with the test output's and the
records' pipe ends attached), it forks; the child starts a session of its own, runs `pytest.main(args)`
with a recorder plugin writing one JSON line per test phase, and exits; the parent answers `{"pid": N}`
at once and `{"exit": CODE}` when the child is gone. Each check is a fresh fork of this clean parent, so
nothing a candidate does in its process outlives the check. Standard library (and pytest) only: this
runs under the box's test interpreter, not the server's.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import gc
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import signal
import socket
import sys

MAX_FILES = 3000
MAX_MESSAGE = 1 << 20
MAX_COMPILE_BYTES = 1_000_000
_CODE: dict[tuple[str, bytes], object] = {}
"""Code objects of the repository's files compiled here (compiled, never run), by path and content hash:
a check's child imports the unchanged files without compiling them again, and an edited file's new
content misses the cache and is compiled as usual."""
_TESTS: dict[tuple[str, bytes], object] = {}
"""The same for test files, with pytest's assertion rewriting applied."""
_PRUNE = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache", ".pytest_cache"}


def _under(path: str | None, root: str) -> bool:
    return bool(path) and os.path.realpath(str(path)).startswith(root + os.sep)


def imported_names(root: str) -> list[str]:
    """Top-level names of the absolute imports in the repository's Python files, in first-seen order."""
    names: dict[str, None] = {}
    seen = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _PRUNE and not os.path.islink(os.path.join(top, d)))
        for name in sorted(f for f in files if f.endswith(".py")):
            seen += 1
            if seen > MAX_FILES:
                return list(names)
            try:
                with open(os.path.join(top, name), "rb") as f:
                    tree = ast.parse(f.read())
            except (OSError, SyntaxError, ValueError, RecursionError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update((a.name.split(".")[0], None) for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names[node.module.split(".")[0]] = None
    return list(names)


def repo_names(root: str) -> set[str]:
    """Top-level names the repository's own files could be imported as (its root and `src/`): a copy of
    one installed in site-packages must not be imported here either, since pytest may put the repository
    ahead of it in the test process and the edited file is the one to run."""
    names: set[str] = set()
    for top in (root, os.path.join(root, "src")):
        try:
            entries = os.listdir(top)
        except OSError:
            continue
        for entry in entries:
            stem, ext = os.path.splitext(entry)
            if ext in (".py", ".pyi", ".so", ".pyd") or (not ext and os.path.isdir(os.path.join(top, entry))):
                names.add(stem.split(".")[0])
    return names


def _outside(name: str, root: str) -> bool:
    """True when `name` resolves to a module outside the repository (finding it runs no module code)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None:
        return False
    places = [spec.origin, *(spec.submodule_search_locations or [])]
    return not any(_under(p, root) for p in places if p)


def _try_import(name: str) -> None:
    with contextlib.suppress(BaseException):
        importlib.import_module(name)


def warm(root: str, bare: bool) -> list[str]:
    """Import what the checks need; the repository modules that came in anyway (empty when clean)."""
    import _pytest
    import pytest  # noqa: F401

    own = repo_names(root)

    for info in pkgutil.iter_modules(_pytest.__path__, "_pytest."):
        _try_import(info.name)
    if not bare:
        with contextlib.suppress(Exception):
            for ep in importlib.metadata.entry_points(group="pytest11"):
                if ep.module.split(".")[0] not in own and _outside(ep.module.split(".")[0], root):
                    _try_import(ep.module)
        for name in imported_names(root):
            if name not in sys.modules and name not in own and _outside(name, root):
                _try_import(name)
    return [n for n, m in list(sys.modules.items())
            if n.split(".")[0] in own or _under(getattr(m, "__file__", None), root)]


def _is_test(name: str) -> bool:
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def precompile(root: str) -> None:
    """Compile (never execute) the repository's Python files into _CODE and _TESTS."""
    from _pytest.assertion.rewrite import rewrite_asserts

    seen = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _PRUNE and not os.path.islink(os.path.join(top, d)))
        for name in sorted(f for f in files if f.endswith(".py")):
            seen += 1
            path = os.path.join(top, name)
            if seen > MAX_FILES or os.path.islink(path) or os.path.getsize(path) > MAX_COMPILE_BYTES:
                continue
            with contextlib.suppress(Exception, RecursionError), open(path, "rb") as f:
                data = f.read()
                key = (path, hashlib.sha256(data).digest())
                _CODE[key] = compile(data, path, "exec", dont_inherit=True)
                if _is_test(name):
                    tree = ast.parse(data, filename=path)
                    rewrite_asserts(tree, data, path, None)
                    _TESTS[key] = compile(tree, path, "exec", dont_inherit=True)


def use_precompiled() -> None:
    """Make the import system and pytest's assertion rewriter take code from the caches on a hit."""
    import importlib._bootstrap_external as external

    import _pytest.assertion.rewrite as rewrite

    compile_source = external.SourceLoader.source_to_code

    def source_to_code(self, data, path, *, _optimize=-1):  # type: ignore[no-untyped-def]
        if _optimize == -1 and isinstance(data, bytes):
            hit = _CODE.get((str(path), hashlib.sha256(data).digest()))
            if hit is not None:
                return hit
        return compile_source(self, data, path, _optimize=_optimize)

    external.SourceLoader.source_to_code = source_to_code  # type: ignore[method-assign]
    rewrite_test = rewrite._rewrite_test
    stat_first = "stat" in str(getattr(rewrite_test, "__annotations__", {}).get("return", ""))

    def cached_rewrite(fn, config):  # type: ignore[no-untyped-def]
        source = fn.read_bytes()
        hit = _TESTS.get((str(fn), hashlib.sha256(source).digest()))
        if hit is None:
            return rewrite_test(fn, config)
        return (os.stat(fn) if stat_first else importlib.util.source_hash(source)), hit

    rewrite._rewrite_test = cached_rewrite


class Recorder:
    """Pytest plugin of the child: one line per test phase to the records pipe."""

    def __init__(self, fd: int) -> None:
        self.out = os.fdopen(fd, "w", buffering=1)

    def pytest_runtest_logreport(self, report) -> None:  # type: ignore[no-untyped-def]
        self.out.write(json.dumps({"id": report.nodeid, "when": report.when, "outcome": report.outcome}) + "\n")

    def pytest_collectreport(self, report) -> None:  # type: ignore[no-untyped-def]
        if not report.passed:
            self.out.write(json.dumps({"id": report.nodeid, "when": "collect", "outcome": report.outcome}) + "\n")


def child(sock: socket.socket, args: list[str], out: int, records: int) -> None:
    """In the fork: a session of its own, output to the pipe, pytest in-process; never returns."""
    code = 3
    try:
        sock.close()
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        import pytest

        code = int(pytest.main(args, plugins=[Recorder(records)]))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        code = 3
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(sock: socket.socket) -> None:
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
        except OSError:
            return
        if not msg:
            return
        try:
            args = [str(a) for a in json.loads(msg)["args"]]
            out, records = fds
        except (ValueError, KeyError, TypeError):
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "bad check request"}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            child(sock, args, out, records)
        os.close(out)
        os.close(records)
        sock.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())


def main() -> None:
    fd, bare = int(sys.argv[1]), "--bare" in sys.argv[2:]
    with contextlib.suppress(OSError, AttributeError):  # same-uid test code must not ptrace the clean parent
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    root = os.path.realpath(os.environ.get("PATCHER_REPO_ROOT") or os.getcwd())
    sock = socket.socket(fileno=fd)
    tainted = warm(root, bare)
    if tainted and not bare:
        os.set_inheritable(fd, True)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), str(fd), "--bare"])
    if tainted:
        sock.send(json.dumps({"error": f"importing pytest imports the repository ({tainted[0]})"}).encode())
        return
    with contextlib.suppress(Exception):
        precompile(root)
        use_precompiled()
    gc.collect()
    gc.freeze()  # the children's collections skip what is here, so they do not copy every page of it
    sock.send(json.dumps({"ready": len(sys.modules), "bare": bare, "precompiled": len(_CODE)}).encode())
    serve(sock)


if __name__ == "__main__":
    main()
