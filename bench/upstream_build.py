"""A real upstream bug fix rebuilt at run time from PyPI sdists: the base repository and the fix's diff.

The buggy release's sdist is the base; the fix's own test (named functions of the fixed release's test file,
taken by AST) is put into the base's test file and committed with it, so the reproduction is the test that came
with the fix. The fix itself is either the named functions or methods of the fixed release, spliced by AST over
the base's (`fix`), or a few quoted old→new lines (`edits`) where the release carries more than the fix. Nothing
fetched is kept in the repository: sdists are cached under PATCHER_BENCH_CACHE (default
~/.cache/patcher-bench/upstream).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.upstream_cases import Case

CACHE = Path(os.environ.get("PATCHER_BENCH_CACHE") or Path.home() / ".cache/patcher-bench/upstream")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]


@dataclass(frozen=True)
class Built:
    """The base repository (a git work tree, the fix's test committed) and the fix as a diff against it."""

    repo: Path
    diff: str
    test_command: str


def sdist(dist: str, version: str) -> Path:
    """The unpacked sdist of `dist==version` (pip's configured index; cached; no install, no dependencies)."""
    into = CACHE / "sdists" / f"{dist}-{version}"
    done = into / ".complete"
    if not done.exists():
        shutil.rmtree(into, ignore_errors=True)
        into.mkdir(parents=True)
        download = ["-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", f"{dist}=={version}", "-d",
                    str(into)]
        if subprocess.run([sys.executable, *download], capture_output=True, timeout=300).returncode:
            _old_download(download)
        archive = next(p for p in into.iterdir() if p.is_file())
        _unpack(archive, into)
        archive.unlink()
        done.touch()
    return next(p for p in into.iterdir() if p.is_dir())


SHIM = """import collections, collections.abc
for name in collections.abc.__all__:
    if not hasattr(collections, name):
        setattr(collections, name, getattr(collections.abc, name))
"""
"""Put back for an old release's setup.py only (pip reads its metadata by running it on the host's Python):
`collections.Mapping` and its kin, removed in Python 3.10."""


def _old_download(download: list[str]) -> None:
    """pip download of an sdist whose setup.py imports the package on an old Python's APIs: without build
    isolation, in a helper venv with setuptools and wheel, the shim above on the path."""
    helper, shim = CACHE / "pip-helper", CACHE / "shim"
    if not (helper / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(helper)], check=True, capture_output=True)
        subprocess.run([str(helper / "bin/python"), "-m", "pip", "install", "-q", "setuptools<70", "wheel"],
                       check=True, capture_output=True, timeout=300)
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "sitecustomize.py").write_text(SHIM)
        (helper / ".complete").touch()
    subprocess.run([str(helper / "bin/python"), *download, "--no-build-isolation"], check=True, capture_output=True,
                   timeout=300, env={**os.environ, "PYTHONPATH": str(shim)})


def _unpack(archive: Path, into: Path) -> None:
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():  # zip member names are checked like tar's data filter would
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ValueError(f"unsafe member in {archive.name}: {member}")
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")


def def_span(source: str, qualname: str) -> tuple[int, int, int] | None:
    """(first line incl. decorators, last line, indent) of the def or class `qualname` ("Class.method")."""
    body: list[ast.stmt] = ast.parse(source).body
    node: ast.stmt | None = None
    for part in qualname.split("."):
        kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        node = next((n for n in body if isinstance(n, kinds) and n.name == part), None)
        if node is None:
            return None
        body = node.body  # type: ignore[attr-defined]
    assert node is not None and node.end_lineno is not None
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno, node.col_offset


def def_source(source: str, qualname: str) -> str:
    span = def_span(source, qualname)
    if span is None:
        raise LookupError(f"{qualname} not found")
    lines = source.splitlines(keepends=True)
    return "".join(lines[span[0] - 1:span[1]])


def splice(dest: str, src: str, qualname: str) -> str:
    """`dest` with the def `qualname` taken from `src`: replaced where `dest` has it, else added at the end of
    its class (or of the module)."""
    new = def_source(src, qualname)
    lines = dest.splitlines(keepends=True)
    span = def_span(dest, qualname)
    if span is not None:
        return "".join([*lines[:span[0] - 1], new, *lines[span[1]:]])
    owner = qualname.rpartition(".")[0]
    if owner:
        owner_span = def_span(dest, owner)
        if owner_span is None:  # a test class new in the fixed release: its header, then this method alone
            return splice(splice(dest, _header(src, owner), owner), src, qualname)
        end = owner_span[1]
        return "".join([*lines[:end], "\n", new, *lines[end:]])
    text = dest if dest.endswith("\n") else dest + "\n"
    return f"{text}\n\n{new}"


def _header(source: str, qualname: str) -> str:
    """The class `qualname` of `source` with its statement line(s) and a `pass` body (methods come one by one)."""
    span = def_span(source, qualname)
    if span is None or "." in qualname:
        raise LookupError(f"{qualname} not found")
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == qualname)
    lines = source.splitlines(keepends=True)[span[0] - 1:node.body[0].lineno - 1]
    return "".join(lines) + "    pass\n"


def _names(spec: str) -> tuple[str, str]:
    """"path::Qual.name" → (path, "Qual.name")."""
    path, _, qualname = spec.partition("::")
    return path, qualname.replace("::", ".")


def _read(path: Path) -> str:
    with path.open(encoding="utf-8", newline="") as f:  # line endings as released (some sdists have CRLF)
        return f.read()


def _write(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(text)


def _git(repo: Path, *args: str) -> str:
    """git's output as it wrote it (text mode would turn a CRLF file's diff lines into LF, and the diff then
    no longer applies)."""
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True).stdout.decode()


def build(case: Case, work: Path) -> Built:
    """The base repo under `work/repo` (the buggy release with the fix's test) and the fix's diff."""
    buggy, fixed = sdist(case.dist, case.buggy), sdist(case.dist, case.fixed)
    repo = work / "repo"
    shutil.copytree(buggy, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".complete"))
    for spec in case.tests:
        path, qualname = _names(spec)
        target = repo / path
        if target.exists():
            _write(target, splice(_read(target), _read(fixed / path), qualname))
        else:  # a test file new in the fixed release comes whole
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixed / path, target)
    for rel in case.files:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixed / rel, repo / rel)
    for args in (["init", "-q", "-b", "main"], ["add", "-A", "-f"], ["commit", "-q", "-m", "base"]):
        _git(repo, *args)
    for spec in case.fix:
        path, qualname = _names(spec)
        _write(repo / path, splice(_read(repo / path), _read(fixed / path), qualname))
    for edit in case.edits:
        text = _read(repo / edit.path)
        if text.count(edit.old) != 1:
            raise LookupError(f"{case.id}: the old text occurs {text.count(edit.old)} times in {edit.path}")
        _write(repo / edit.path, text.replace(edit.old, edit.new))
    diff = _git(repo, "diff", "--no-color", "--no-renames")
    _git(repo, "checkout", "-q", "--", ".")
    return Built(repo, diff, case.test_command)
