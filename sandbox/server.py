"""The resident tool server: `python3 -S -P -m sandbox.server --repo PATH [--base COMMIT] [--report-dir DIR]
[--sweep uid|group]` (in a box: `python3 -S -c BOOT`, sandbox/boot.py, BOOT dropping sys.path[0] as -P would).

-S and -P because this process holds the signing key: no code of the repository (its directory is the
working directory, which -m would put first on sys.path, ahead of the standard library) and none of
what the environment installed (a .pth file's `import` lines) may ever run in it. Both also start it faster.

Speaks protocol.py's JSON lines on stdin/stdout: a hello carrying the signing key, then one signed result per
request line. It ends only at the end of stdin or when the tree boot.py unpacks (in a box) failed.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import sys
import time
from collections.abc import Callable
from types import SimpleNamespace as Namespace
from typing import TYPE_CHECKING

from sandbox import tools
from sandbox.commands import DEFAULT_ALLOWLIST
from sandbox.paths import ToolError
from sandbox.protocol import (
    REPORT_DIR,
    TOOL_NAMES,
    CheckRequest,
    EditFileRequest,
    GitDiffRequest,
    HeldOutRequest,
    JudgeRequest,
    ModulesRequest,
    PingRequest,
    ProtocolError,
    ReadFileRequest,
    ReadReportRequest,
    Request,
    RunTestRequest,
    SearchCodeRequest,
    ToolResult,
    WriteFileRequest,
    decode_request,
    encode_result,
)
from sandbox.tree import Tree

if TYPE_CHECKING:
    from typing import Any, BinaryIO

    Handler = Callable[[tools.Context, Any, float], ToolResult]

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MAX_DEADLINE_S = 24 * 3600.0



def _run_test(ctx: tools.Context, req: RunTestRequest, deadline_at: float) -> ToolResult:
    from sandbox import runner  # on the first run, as tools.run_capped

    return runner.run_test(req.command, ctx.allow, ctx.repo, ctx.report_dir, ctx.sweep, deadline_at,
                           evidence=req.evidence is True, heldout=str(req.heldout or "") if req.evidence else "")


def _check(ctx: tools.Context, req: CheckRequest, deadline_at: float) -> ToolResult:
    from sandbox import forks  # on the first check: its socket import would slow every box's start

    return forks.check(req.command, ctx.allow, ctx.repo, ctx.sweep, deadline_at, start_only=req.start)


def _judge(ctx: tools.Context, req: JudgeRequest, deadline_at: float) -> ToolResult:
    from sandbox import judging  # on the first judge run, as forks

    return judging.judge(req.job, ctx.repo, ctx.sweep, deadline_at)


def _held_out(ctx: tools.Context, req: HeldOutRequest, deadline_at: float) -> ToolResult:
    from sandbox import heldout  # on the first held-out run, as judging

    return heldout.held_out(req.job, ctx.repo, ctx.sweep, deadline_at)


def _ping(ctx: tools.Context, req: PingRequest, deadline_at: float) -> ToolResult:
    return ToolResult(is_error=False, output="pong")


def _modules(ctx: tools.Context, req: ModulesRequest, deadline_at: float) -> ToolResult:
    from sandbox import installed  # on the first modules request: importlib.metadata pulls in zipfile, email...

    return installed.modules()


HANDLERS: dict[type, Handler] = {
    ReadFileRequest: tools.read_file,
    SearchCodeRequest: tools.search_code,
    GitDiffRequest: tools.git_diff,
    WriteFileRequest: tools.write_file,
    EditFileRequest: tools.edit_file,
    RunTestRequest: _run_test,
    JudgeRequest: _judge,
    HeldOutRequest: _held_out,
    ReadReportRequest: tools.read_report,
    PingRequest: _ping,
    ModulesRequest: _modules,
    CheckRequest: _check,
}


def log(message: str) -> None:
    print(f"sandbox.server: {message}", file=sys.stderr, flush=True)


def harden() -> None:
    """Non-dumpable (test code of the same uid cannot ptrace us or read our memory, hence the key);
    child subreaper (orphans of a test re-parent to us, so the sweep finds them); libgcc_s loaded now, while files
    can be opened: glibc opens it the first time a thread of ours ends by unwinding (pthread_exit, pthread_cancel:
    every thread's end on 3.9, a daemon thread's at exit on 3.11), and where it cannot then (the open-file limit
    met, memory short) it aborts the whole server ("libgcc_s.so.1 must be installed for pthread_cancel to work",
    seen once in a judges' box: the judge could not judge)."""
    try:
        ctypes.CDLL("libgcc_s.so.1")
    except OSError as e:
        log(f"could not load libgcc_s: {e}")
    libc = ctypes.CDLL(None, use_errno=True)
    for option, value, what in ((PR_SET_DUMPABLE, 0, "non-dumpable"),
                                (PR_SET_CHILD_SUBREAPER, 1, "a child subreaper")):
        if libc.prctl(option, value, 0, 0, 0) != 0:
            log(f"could not become {what}: {os.strerror(ctypes.get_errno())}")


def private_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Keep the protocol's fds to ourselves; fds 0 and 1 become /dev/null for anything we start."""
    inp, out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return inp, out


def read_hello(inp: BinaryIO) -> tuple[bytes, tuple[tuple[str, ...], ...], str | None]:
    """The signing key, extra allowlist entries and (for a box started before its job) the base commit."""
    try:
        hello = json.loads(inp.readline())["hello"]
        key = bytes.fromhex(hello["key"])
        extra = tuple(tuple(prefix) for prefix in hello.get("allow") or ())
        base = hello.get("base")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ProtocolError(f"bad hello line: {e!r}") from e
    if base is not None and not (isinstance(base, str) and base):
        raise ProtocolError("bad hello line: base must be a commit id")
    if len(key) < 16:
        raise ProtocolError("bad hello line: the key must be at least 16 bytes")
    if not all(prefix and all(isinstance(a, str) and a for a in prefix) for prefix in extra):
        raise ProtocolError("bad hello line: allow must be a list of non-empty lists of strings")
    return key, extra, base


def _request_id(line: bytes) -> int:
    try:
        call_id = json.loads(line).get("id")
    except (ValueError, AttributeError):
        return -1
    return call_id if isinstance(call_id, int) and not isinstance(call_id, bool) else -1


def _deadline(deadline_s: float) -> float:
    if not math.isfinite(deadline_s) or deadline_s <= 0:
        deadline_s = 60.0
    return time.monotonic() + min(deadline_s, MAX_DEADLINE_S)


def call(ctx: tools.Context, request: Request, deadline_s: float) -> ToolResult:
    tool = TOOL_NAMES[type(request)]
    try:
        return HANDLERS[type(request)](ctx, request, _deadline(deadline_s))
    except ToolError as e:
        return ToolResult.error(str(e))
    except Exception as e:  # a tool failure is an observation for the model, never the server's end
        import traceback  # only when a handler crashed: its import (textwrap...) would slow every start

        traceback.print_exc()
        return ToolResult.error(f"{tool} failed: {e}; retrying the same call will probably not help")


def handle(ctx: tools.Context, line: bytes) -> tuple[int, ToolResult]:
    """One request line in, one (id, result) out."""
    started = time.monotonic()
    call_id = _request_id(line)
    try:
        decoded_id, request, deadline_s = decode_request(line)
        if decoded_id != call_id:
            raise ProtocolError("the request id must be an integer")
    except Exception as e:  # anything unparseable is the caller's mistake, answered as such
        what = str(e) if isinstance(e, ProtocolError) else f"bad request: {e!r}"
        result = ToolResult.error(f"{what}; send one JSON request per line as protocol.py describes")
    else:
        result = call(ctx, request, deadline_s)
    return call_id, result._replace(duration_ms=round((time.monotonic() - started) * 1000, 3))


def serve(ctx: tools.Context, key: bytes, inp: BinaryIO, out: BinaryIO) -> int:
    while line := inp.readline():
        call_id, result = handle(ctx, line)
        out.write(_encoded(call_id, result, key))
        out.flush()
    return 0


def _encoded(call_id: int, result: ToolResult, key: bytes) -> bytes:
    """The signed line; a result that JSON cannot carry (a handler's bug) is answered as an error, never
    the server's end, which would leave the host only "closed its stream"."""
    try:
        return encode_result(call_id, result, key)
    except (TypeError, ValueError) as e:
        import traceback

        traceback.print_exc()
        return encode_result(call_id, ToolResult.error(f"the tool's result could not be sent: {e!r}"), key)


def _sweep_mode(requested: str) -> str:
    if requested == "uid" and os.getuid() == 0:
        log("refusing --sweep uid as root (kill(-1) would hit every process); using --sweep group")
        return "group"
    return requested


OPTIONS = {"--repo": "repo", "--base": "base", "--report-dir": "report_dir", "--sweep": "sweep"}


def parse_args(argv: list[str] | None) -> Namespace:
    """The options as the host always spells them (`--name value`), parsed without argparse, whose import
    costs every box's start-up; anything else goes to argparse for its usage and error messages."""
    args = sys.argv[1:] if argv is None else argv
    got: dict[str, str | None] = {"repo": None, "base": None, "report_dir": REPORT_DIR, "sweep": "group"}
    pairs = list(zip(args[::2], args[1::2]))
    if len(args) % 2 == 0 and all(k in OPTIONS for k, _ in pairs):
        got.update({OPTIONS[k]: v for k, v in pairs})
        if got["repo"] and got["sweep"] in ("uid", "group"):
            return Namespace(**got)
    return _argparse(args)


def _argparse(argv: list[str]) -> Namespace:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m sandbox.server", description=__doc__)
    parser.add_argument("--repo", required=True, help="repository the tools work on")
    parser.add_argument("--base", help="commit git_diff compares against (else the hello names it)")
    parser.add_argument("--report-dir", default=REPORT_DIR, help="where test reports are written")
    parser.add_argument("--sweep", choices=("uid", "group"), default="group",
                        help="after a test, kill every process of our uid (container) or our descendants")
    return Namespace(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None, tree: Tree | None = None) -> int:
    """`tree`: the work tree boot.py is unpacking (in a container), waited for before the hello is read."""
    args = parse_args(argv)
    harden()
    inp, out = private_stdio()
    if failed := (tree.finish() if tree else ""):
        log(failed)
    if tree and tree.desynced:  # bytes of the tree may be unread ahead of the hello: it cannot be found
        return 2
    try:
        key, extra, base = read_hello(inp)
    except ProtocolError as e:
        log(str(e))
        return 2
    base = base or args.base
    if not base:
        log("no base commit: pass --base or name it in the hello")
        return 2
    if not os.path.isdir(args.repo):
        log(f"--repo {args.repo} is not a directory")
        return 2
    ctx = tools.Context(repo=os.path.realpath(args.repo), base=base, report_dir=args.report_dir,
                        allow=DEFAULT_ALLOWLIST + extra, sweep=_sweep_mode(args.sweep))
    ready = ToolResult.error(failed) if failed else ToolResult(
        is_error=False, output="ready", data={"sweep": ctx.sweep, "pid": os.getpid()})
    try:
        out.write(encode_result(0, ready, key))
        out.flush()
        return 2 if failed else serve(ctx, key, inp, out)  # never a tool on half a tree
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
