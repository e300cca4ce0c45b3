"""Integrity policy for a candidate diff: what a fix may touch before any test of it is believed.

A diff may change source files and add new tests. It may not modify, delete or rename existing tests,
touch conftest files or test/CI configuration, reach outside the repo or into `.git`, change file modes,
add symlinks, submodules or binary files, register pytest plugins or hooks, or exceed a size cap.
The check reads the text with unidiff plus a scan of git's extended header lines; verify.py cross-checks
what `git apply` actually changed against `files_changed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

TEST_DIRS = frozenset({"tests", "test", "testing"})
TEST_FILE = re.compile(r"(?:test_.*|.*_test|tests?)\.py$")
NEW_TEST_FILE = re.compile(r"(?:test_.*|.*_test)\.py$")
CONFIG_NAMES = frozenset({
    "conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py", "Makefile",
    ".gitlab-ci.yml", ".pre-commit-config.yaml", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile",
    "sitecustomize.py", "usercustomize.py", ".gitmodules",
})
CONFIG_DIRS = frozenset({".github", ".circleci"})
PLUGIN_CODE = re.compile(r"\bpytest_plugins\b|^\s*def pytest_\w+\s*\(|\b_pytest\b|\bhookimpl\b|\bpytest11\b")
_LINK = re.compile(r"(?:new file |deleted file |old |new )mode 1[26]0000|index \S+ 1[26]0000")
_MODE = re.compile(r"(?:old|new) mode ")
_COPY = re.compile(r"copy (?:from|to) ")
_BINARY = re.compile(r"(?:GIT binary patch|Binary files .* differ)")
_HEADER_RULES = (
    (_LINK, "{path}: symbolic links and submodules may not be added, removed or changed"),
    (_MODE, "{path}: file modes may not change"),
    (_COPY, "{path}: copies are not allowed; add the file as a new file instead"),
)
_RAW_RULES = (
    (_BINARY, "binary", "the diff contains a binary patch, which is not allowed"),
    (_LINK, "symbolic links", "the diff touches a symbolic link or submodule, which is not allowed"),
    (_MODE, "file modes", "the diff changes a file mode, which is not allowed"),
)


@dataclass
class PolicyResult:
    ok: bool
    violations: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    added_tests: list[str] = field(default_factory=list)


def is_test_path(path: str) -> bool:
    *dirs, name = path.split("/")
    return any(d in TEST_DIRS for d in dirs) or bool(TEST_FILE.fullmatch(name))


def is_config_path(path: str) -> bool:
    *dirs, name = path.split("/")
    return name in CONFIG_NAMES or name.endswith(".pth") or any(d in CONFIG_DIRS for d in dirs)


def _strip(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _bad_path(path: str) -> str | None:
    parts = path.split("/")
    if path.startswith("/") or re.match(r"[A-Za-z]:[\\/]", path):
        return f"{path}: absolute paths are not allowed"
    if ".." in parts or any(".." in p.split("\\") for p in parts):
        return f"{path}: paths may not contain '..'"
    if any(p.casefold() == ".git" for p in parts):
        return f"{path}: nothing under .git may change"
    return None


def _parse(diff: str) -> PatchSet:
    return PatchSet(diff)


def _file_violations(pf: PatchedFile, existing: set[str]) -> tuple[list[str], list[str]]:
    """(violations, paths) of one file of the diff."""
    source, target = _strip(pf.source_file), _strip(pf.target_file)
    paths = list(dict.fromkeys(p for p in (source, target) if p))
    out = [v for p in paths if (v := _bad_path(p))]
    label = target or source or "?"
    info = [line.rstrip("\n") for line in pf.patch_info]
    out += [msg.format(path=label) for rx, msg in _HEADER_RULES if any(rx.match(line) for line in info)]
    if pf.is_binary_file:
        out.append(f"{label}: binary files may not be changed")
    for p in paths:
        if is_config_path(p):
            out.append(f"{p}: conftest files and test, packaging or CI configuration may not be added, changed "
                       "or removed (they change which tests run)")
        elif p in existing and is_test_path(p):
            verb = "renamed" if pf.is_rename else "deleted" if pf.is_removed_file or p != target else "modified"
            out.append(f"{p}: existing tests may not be {verb}; add a new test file instead")
    added = [line.value for hunk in pf for line in hunk if line.is_added]
    if any(PLUGIN_CODE.search(text) for text in added):
        out.append(f"{label}: the diff adds pytest plugin or hook code, which can change how tests are reported")
    return out, paths


def check_diff(diff: str, base_files: Iterable[str], max_bytes: int = 256_000) -> PolicyResult:
    """Whether the diff keeps to the integrity policy; each violation is one sentence."""
    if not diff.strip():
        return PolicyResult(ok=True)
    size = len(diff.encode())
    if size > max_bytes:
        return PolicyResult(ok=False, violations=[f"the diff is {size} bytes; the limit is {max_bytes}"])
    try:
        patch = _parse(diff)
    except (UnidiffParseError, ValueError, IndexError) as e:
        return PolicyResult(ok=False, violations=[f"the diff cannot be parsed ({str(e)[:120]})"])
    if not len(patch):
        return PolicyResult(ok=False, violations=["the diff cannot be parsed (no file changes found in it)"])
    existing = set(base_files)
    violations: list[str] = []
    files: list[str] = []
    added_tests: list[str] = []
    for pf in patch:
        more, paths = _file_violations(pf, existing)
        violations += more
        files += paths
        target = _strip(pf.target_file)
        if pf.is_added_file and target and target not in existing and NEW_TEST_FILE.fullmatch(target.split("/")[-1]):
            added_tests.append(target)
    lines = diff.splitlines()
    for rx, kind, msg in _RAW_RULES:  # git apply reads header lines unidiff may not attach to a file
        if any(rx.match(line) for line in lines) and not any(kind in v for v in violations):
            violations.append(msg)
    files = list(dict.fromkeys(files))
    return PolicyResult(ok=not violations, violations=list(dict.fromkeys(violations)), files_changed=files,
                        added_tests=added_tests)


def tests_only(diff: str) -> str:
    """The part of the diff that adds new files under test directories or named like tests (not conftest)."""
    try:
        patch = _parse(diff)
    except (UnidiffParseError, ValueError, IndexError):
        return ""
    keep = []
    for pf in patch:
        target = _strip(pf.target_file)
        if (pf.is_added_file and target and not pf.is_binary_file and not is_config_path(target)
                and is_test_path(target)):
            keep.append(str(pf))
    return "".join(keep)
