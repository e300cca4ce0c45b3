"""The tools: each takes the server's Context, one typed request and an absolute monotonic deadline.

A tool returns a ToolResult or raises ToolError with the sentence the model reads.
"""

from __future__ import annotations

import os
import stat
from io import BufferedReader
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from sandbox.nearest import hint
from sandbox.paths import ToolError, listing, open_regular, plain_name, resolve_read, resolve_write
from sandbox.protocol import (
    MAX_MODEL_OUTPUT,
    MAX_WRITE_BYTES,
    EditFileRequest,
    GitDiffRequest,
    ReadFileRequest,
    ReadReportRequest,
    SearchCodeRequest,
    ToolResult,
    WriteFileRequest,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sandbox.runner import Captured

MAX_MATCHES = 200
MAX_DIFF_BYTES = 8 * 1024 * 1024
MAX_REPORT_BYTES = 8 * 1024 * 1024
GIT = ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*",
       "-c", "core.pager=cat"]
GIT_HOME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "githome")
DIFF_FLAGS = ["--no-ext-diff", "--no-textconv", "--binary", "--no-color", "--src-prefix=a/", "--dst-prefix=b/"]


class Context(NamedTuple):
    repo: str
    """Real path of the repository."""
    base: str
    """Commit the agent's changes are measured against."""
    report_dir: str
    allow: tuple[tuple[str, ...], ...]
    """run_test allowlist: the default plus what the hello added."""
    sweep: str
    """"group" or "uid" (see runner.sweep)."""


def cap(text: str, limit: int = MAX_MODEL_OUTPUT) -> tuple[str, int]:
    raw = text.encode()
    if len(raw) <= limit:
        return text, 0
    cut = len(raw) - limit
    return raw[:limit].decode(errors="ignore") + f"\n[… {cut} bytes cut …]", cut


def read_file(ctx: Context, req: ReadFileRequest, deadline_at: float) -> ToolResult:
    path = resolve_read(ctx.repo, req.path)
    if path.is_dir():
        raise ToolError(listing(path, req.path))
    start, end = req.start_line or 1, req.end_line
    if start < 1 or (end is not None and end < start):
        raise ToolError(f"bad line range {start}..{end}: start_line counts from 1 and end_line must not be "
                        "below it")
    with open_regular(path, req.path, "check the path, e.g. with search_code") as f:
        if b"\0" in f.read(8192):
            raise ToolError(f"{req.path!r} is a binary file; read_file shows text files only")
        f.seek(0)
        return _numbered(f, req.path, start, end)


def _numbered(f: BufferedReader, shown: str, start: int, end: int | None) -> ToolResult:
    out: list[str] = []
    size = cut = n = 0
    next_line = None
    for n, raw in enumerate(f, 1):
        if n < start:
            continue
        if end is not None and n > end:
            break
        text = raw.decode(errors="replace").rstrip("\r\n")
        line = f"{n:>6}\t{text}\n"
        if cut or size + len(line.encode()) > MAX_MODEL_OUTPUT:
            next_line = next_line or n
            cut += len(raw)
            continue
        out.append(line)
        size += len(line.encode())
    if n == 0:
        return ToolResult(is_error=False, output=f"{shown} is empty")
    if not out:
        raise ToolError(f"{shown!r} has {n} lines; start_line {start} is past the end")
    if cut:
        out.append(f"[… {cut} bytes cut …]\n(read on with start_line={next_line})\n")
    return ToolResult(is_error=False, output="".join(out), truncated_bytes=cut)


class _Lines:
    """Keeps the first matches of a line stream and counts all of them."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.size = self.total = 0
        self.partial = b""

    def add(self, chunk: bytes) -> None:
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        self.partial = self.partial[:MAX_MODEL_OUTPUT]
        for raw in lines:
            self.total += 1
            line = raw.decode(errors="replace").removeprefix("./")
            if len(self.kept) < MAX_MATCHES and self.size + len(line) < MAX_MODEL_OUTPUT:
                self.kept.append(line)
                self.size += len(line) + 1


def search_code(ctx: Context, req: SearchCodeRequest, deadline_at: float) -> ToolResult:
    shown = req.path or "."
    target = resolve_read(ctx.repo, shown)
    if not target.exists():
        raise ToolError(f"no such file or directory: {shown!r}; search the whole repo by leaving path out")
    argv = ["rg", "--no-config", "--line-number", "--with-filename", "--no-heading", "--color", "never",
            "--hidden", "--sort", "path", "--max-columns", "300", "--max-columns-preview", "-g", "!.git"]
    if req.glob:
        argv += ["-g", req.glob]
    argv += ["-e", req.pattern, "--", os.path.relpath(target, ctx.repo)]
    hits = _Lines()
    got = run_capped(argv, ctx.repo, tool_env(), deadline_at, hits.add)
    if got.returncode == 2 and not hits.total:
        raise ToolError(f"search failed: {got.stderr or 'rg exit code 2'}; fix the pattern or glob and retry")
    if not hits.total:
        where = shown + (f" (glob {req.glob})" if req.glob else "")
        stopped = " before the search stopped at its deadline" if got.timed_out else ""
        return ToolResult(is_error=False, output=f"no matches for {req.pattern!r} in {where}{stopped}")
    notes = []
    if hits.total > len(hits.kept):
        notes.append(f"[… {hits.total - len(hits.kept)} more matching lines not shown; narrow the pattern, "
                     "path or glob …]")
    if got.timed_out:
        notes.append("[the search stopped at its deadline; results are partial]")
    if got.returncode == 2:
        notes.append(f"[rg reported: {got.stderr}]")
    return ToolResult(is_error=False, output="\n".join(hits.kept + notes), data={"matches": hits.total})


def tool_env() -> dict[str, str]:
    """git's HOME and global config are a read-only file of the image: git before 2.32 knows no GIT_CONFIG_GLOBAL
    and would read $HOME/.gitconfig, which test code could write if HOME were /tmp."""
    return {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": GIT_HOME,
            "XDG_CONFIG_HOME": GIT_HOME, "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.path.join(GIT_HOME, ".gitconfig"),
            "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1"}


def run_capped(argv: list[str], cwd: str, env: dict[str, str], deadline_at: float,
               sink: Callable[[bytes], None]) -> Captured:
    """runner.run_capped, imported on the first search or diff: runner's imports (subprocess, selectors, the
    evidence plugin's) would slow every box's start, and a first read needs none of them."""
    from sandbox import runner

    return runner.run_capped(argv, cwd, env, deadline_at, sink)


def _git(ctx: Context, args: list[str], env: dict[str, str], deadline_at: float) -> bytes:
    out = bytearray()
    got = run_capped(GIT + args, ctx.repo, env, deadline_at,
                     lambda chunk: out.extend(chunk[: MAX_DIFF_BYTES + 1 - len(out)]))
    if got.timed_out:
        raise ToolError(f"git {args[0]} did not finish before the deadline; retry with a longer deadline")
    if got.returncode != 0:
        raise ToolError(f"git {args[0]} failed: {got.stderr or f'exit code {got.returncode}'}; "
                        "retrying the same call will not help")
    if len(out) > MAX_DIFF_BYTES:
        raise ToolError(f"the diff is larger than {MAX_DIFF_BYTES} bytes; remove large generated files")
    return bytes(out)


def git_diff(ctx: Context, req: GitDiffRequest, deadline_at: float) -> ToolResult:
    if req.ref is not None:
        if not req.ref.strip() or req.ref.startswith("-"):
            raise ToolError(f"refused: {req.ref!r} is not a git ref; give a commit, branch or tag name")
        raw, skipped = _git(ctx, ["diff", *DIFF_FLAGS, req.ref, ctx.base, "--"], tool_env(), deadline_at), ""
    else:
        raw, skipped = _worktree_diff(ctx, deadline_at)
    diff = raw.decode(errors="replace")
    between = f" between {req.ref} and the base" if req.ref else ""
    output, cut = cap(diff) if diff else (f"no changes{between}", 0)
    output += f"\n{skipped}" if skipped else ""
    return ToolResult(is_error=False, output=output, truncated_bytes=cut, data={"diff": diff})


def _worktree_diff(ctx: Context, deadline_at: float) -> tuple[bytes, str]:
    """Work tree (new files included) vs base. A private index (base's tree plus intent-to-add entries
    for new files) and object dir: nothing is hashed into, or touched in, .git. Paths the repo's own
    index marks skip-worktree (symlinks leaving the repo, replaced by a stand-in at intake) stay so."""
    # relative to the repo (git 2.30, Debian bullseye's, has no --path-format=absolute)
    objects = os.path.join(ctx.repo, _git(ctx, ["rev-parse", "--git-path", "objects"], tool_env(),
                                          deadline_at).decode().strip())
    listed = _git(ctx, ["ls-files", "-v", "-z"], tool_env(), deadline_at).split(b"\0")
    skip = [os.fsdecode(entry[2:]) for entry in listed if entry.startswith(b"S ")]
    import tempfile  # here: its imports (shutil, random...) would slow every box's start

    with tempfile.TemporaryDirectory(prefix="patcher-diff-") as tmp:
        env = tool_env() | {"GIT_INDEX_FILE": os.path.join(tmp, "index"),
                            "GIT_OBJECT_DIRECTORY": os.path.join(tmp, "objects"),
                            "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects}
        os.mkdir(env["GIT_OBJECT_DIRECTORY"])
        _git(ctx, ["read-tree", ctx.base], env, deadline_at)
        for i in range(0, len(skip), 500):
            _git(ctx, ["update-index", "--skip-worktree", "--", *skip[i : i + 500]], env, deadline_at)
        added = run_capped([*GIT, "add", "--intent-to-add", "--ignore-errors", "-A", "--", "."], ctx.repo,
                           env, deadline_at, lambda _: None)
        if added.timed_out:
            raise ToolError("git add did not finish before the deadline; retry with a longer deadline")
        skipped = f"[git add skipped some paths: {added.stderr}]" if added.returncode else ""
        return _git(ctx, ["diff", *DIFF_FLAGS, ctx.base, "--"], env, deadline_at), skipped


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"refused: {target.name!r} exists and is not a regular file")
        f.truncate(0)
        f.write(data)


def write_file(ctx: Context, req: WriteFileRequest, deadline_at: float) -> ToolResult:
    data = req.content.encode()
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"content is {len(data)} bytes; write_file takes at most {MAX_WRITE_BYTES}")
    _write(resolve_write(ctx.repo, req.path), data)
    return ToolResult(is_error=False, output=f"wrote {len(data)} bytes to {req.path}")


def edit_file(ctx: Context, req: EditFileRequest, deadline_at: float) -> ToolResult:
    if not req.old_text:
        raise ToolError("old_text is empty; give the exact text to replace, or use write_file for a new file")
    target = resolve_write(ctx.repo, req.path)
    with open_regular(target, req.path, "create it with write_file") as f:
        raw = f.read(MAX_WRITE_BYTES + 1)
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ToolError(f"{req.path!r} is not UTF-8 text; edit_file cannot change it") from None
    count = text.count(req.old_text)
    if count == 0:
        raise ToolError(f"old_text was not found in {req.path}; read the file again and copy the text "
                        "exactly, including whitespace" + hint(text, req.old_text))
    if count > 1:
        raise ToolError(f"old_text matches {count} times in {req.path}; include more context so it matches "
                        "exactly once")
    new = text.replace(req.old_text, req.new_text, 1).encode()
    if len(new) > MAX_WRITE_BYTES:
        raise ToolError(f"the edited file would be {len(new)} bytes; files are capped at {MAX_WRITE_BYTES}")
    _write(target, new)
    line = text[: text.index(req.old_text)].count("\n") + 1
    return ToolResult(is_error=False, output=f"edited {req.path}: replaced 1 match at line {line}")


def read_report(ctx: Context, req: ReadReportRequest, deadline_at: float) -> ToolResult:
    name = plain_name(req.name)
    with open_regular(Path(ctx.report_dir, name), name, "did the test command write it?") as f:
        size = os.fstat(f.fileno()).st_size
        raw = f.read(MAX_REPORT_BYTES)
    text = raw.decode(errors="replace")
    return ToolResult(is_error=False, output=text or f"{name} is empty",
                      truncated_bytes=max(size - len(raw), 0), data={"bytes": len(raw)})
