"""Integrity policy for a candidate diff: what a fix may touch before any test of it is believed.

A diff may change source files and add new tests. It may not modify, delete or rename existing tests,
touch conftest files or test/CI configuration, reach outside the repo or into `.git`, change file modes,
add symlinks, submodules or binary files, register pytest plugins or hooks, or exceed a size cap.
The check reads the text with unidiff plus a scan of git's extended header lines; verify/check.py cross-checks
what `git apply` actually changed against `files_changed`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from patcher.verify.policy.treediff import Change

TEST_DIRS = frozenset({"tests", "test", "testing"})
TEST_FILE = re.compile(r"(?:test_.*|.*_tests?|tests?|testing|.*test_?utils?|_?testutils?)\.py$")
NEW_TEST_FILE = re.compile(r"(?:test_.*|.*_test)\.py$")
CONFIG_NAMES = frozenset({
    # every file the image's pytest reads config from (_pytest/config/findpaths.py), and conftest
    "conftest.py", "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
    "setup.cfg",
    # packaging and dependencies: the environment is built from the base, so a change here is never tested
    "setup.py", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "pdm.lock", "environment.yml",
    "MANIFEST.in", ".python-version", ".envrc", "Dockerfile",
    # a project's own test runner: Django's entry point
    "manage.py",
    # CI, task runners, start-up hooks, git's own view of the tree
    "noxfile.py", "Makefile", ".gitlab-ci.yml", ".pre-commit-config.yaml", ".travis.yml", "azure-pipelines.yml",
    "Jenkinsfile", "bitbucket-pipelines.yml", ".drone.yml", ".coveragerc", "sitecustomize.py",
    "usercustomize.py", ".gitmodules", ".gitignore", ".gitattributes",
})
CONFIG_FILE = re.compile(r"(?:requirements|constraints)[\w.-]*\.(?:txt|in)$")
CONFIG_DIRS = frozenset({".github", ".circleci", ".buildkite", ".vscode", ".devcontainer", "requirements"})
PLUGIN_CODE = re.compile(r"\bpytest_plugins\b|^\s*def pytest_\w+\s*\(|\b_pytest\b|\bhookimpl\b|\bpytest11\b")
_LINK = re.compile(r"(?:new file |deleted file |old |new )mode 0*1[26]0000|index \S+ 0*1[26]0000")
_MODE = re.compile(r"(?:old|new) mode ")
_COPY = re.compile(r"copy (?:from|to) ")
_BINARY = re.compile(r"(?:GIT binary patch|Binary files .* differ)")
_QUOTED = re.compile(r'(?:diff --git .*"|(?:---|\+\+\+) "|rename (?:from|to) "|copy (?:from|to) ")')
_HEADER_RULES = (
    (_LINK, "{path}: symbolic links and submodules may not be added, removed or changed"),
    (_MODE, "{path}: file modes may not change"),
    (_COPY, "{path}: copies are not allowed; add the file as a new file instead"),
)
_RAW_RULES = (
    (_BINARY, "binary", "the diff contains a binary patch, which is not allowed"),
    (_LINK, "symbolic links", "the diff touches a symbolic link or submodule, which is not allowed"),
    (_MODE, "file modes", "the diff changes a file mode, which is not allowed"),
    (_QUOTED, "quoted", "the diff has quoted (escaped) file names, which are not allowed: name files plainly"),
)


@dataclass
class PolicyResult:
    ok: bool
    violations: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    added_tests: list[str] = field(default_factory=list)


def is_test_path(path: str) -> bool:
    """A test file or a file under a test directory: the one rule repair, localization, the engines and
    verification share, so nothing ranks or proposes a line that the policy would then refuse to change."""
    *dirs, name = path.split("/")
    return any(d in TEST_DIRS for d in dirs) or bool(TEST_FILE.fullmatch(name))


def is_config_path(path: str) -> bool:
    """conftest, test/packaging/CI configuration and start-up hooks: no diff may add, change or remove one."""
    *dirs, name = path.split("/")
    return (name in CONFIG_NAMES or bool(CONFIG_FILE.fullmatch(name)) or name.endswith(".pth")
            or any(d in CONFIG_DIRS for d in dirs))


def is_test_or_config(path: str) -> bool:
    """An existing file no diff may change, so no engine should rank, edit or look for fixable code in it."""
    return is_test_path(path) or is_config_path(path)


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
    info = [line.rstrip("\n") for line in pf.patch_info or []]
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


def _is_new_test(pf: PatchedFile) -> bool:
    target = _strip(pf.target_file)
    return bool(pf.is_added_file and target and not pf.is_binary_file and not is_config_path(target)
                and is_test_path(target))


def _split(diff: str, tests: bool) -> str:
    try:
        patch = _parse(diff)
    except (UnidiffParseError, ValueError, IndexError):
        return ""
    return "".join(str(pf) for pf in patch if _is_new_test(pf) == tests)


def tests_only(diff: str) -> str:
    """The part of the diff that adds new files under test directories or named like tests (not conftest)."""
    return _split(diff, tests=True)


def source_only(diff: str) -> str:
    """Everything but the new test files: what fail-to-pass and pass-to-pass are judged with."""
    return _split(diff, tests=False)


RUNNER_NAMES = frozenset({"pytest", "_pytest", "pluggy", "py", "unittest", "iniconfig", "xdist", "patcher_evidence",
                          "patcher_channel", "patcher_unittest", "sitecustomize", "usercustomize"})
_MODULE_SUFFIX = re.compile(r"\.(?:py|pyc|pyw|so|pyd)$|\.[\w-]+\.so$")


def protected_names(installed: Iterable[str]) -> frozenset[str]:
    """Import names a repo file may never take: the runner's, the standard library's, the image's packages'."""
    return RUNNER_NAMES | frozenset(sys.stdlib_module_names) | frozenset(installed)


def check_tree(changes: list[Change], base_files: Iterable[str], protected: frozenset[str],
               known_tests: frozenset[str] = frozenset()) -> list[str]:
    """Violations in what the diff really changed on disk (treediff): the policy as git applied it.

    `known_tests`: files the base suite collected as tests, protected whatever their names."""
    existing = set(base_files)
    after = (existing - {c.path for c in changes if c.kind == "deleted"}) | {c.path for c in changes}
    base_dirs = {"/".join(f.split("/")[:i]) for f in existing for i in range(1, f.count("/") + 1)}
    out: list[str] = []
    for c in changes:
        out += [v for v in (_bad_path(c.path),) if v]
        if c.path.startswith("-") or "/-" in c.path:
            out.append(f"{c.path}: a path part may not start with '-' (it would read as a command option)")
        if c.link:
            out.append(f"{c.path}: symbolic links and submodules may not be added, removed or changed")
        if c.mode_changed:
            out.append(f"{c.path}: file modes may not change")
        if c.binary:
            out.append(f"{c.path}: binary files may not be changed")
        if is_config_path(c.path):
            out.append(f"{c.path}: conftest files and test, packaging or CI configuration may not be added, "
                       "changed or removed (they change which tests run)")
        elif c.path in existing and (is_test_path(c.path) or c.path in known_tests):
            out.append(f"{c.path}: existing tests may not be {c.kind}; add a new test file instead")
        if c.kind == "added" and (name := _shadowed(c.path, after, base_dirs, protected)):
            out.append(f"{c.path}: a new module or package named {name!r} would shadow the test runner, the "
                       "standard library or an installed package; choose another name")
    return list(dict.fromkeys(out))


def _shadowed(path: str, tree: set[str], base_dirs: set[str], protected: frozenset[str]) -> str | None:
    """The protected import name a new file or directory of `path` would take in a directory that is an
    import root (no __init__.py: the repo root, src/, a rootdir-inserted test directory)."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        name = _MODULE_SUFFIX.sub("", part) if last else part
        parent = "/".join(parts[:i])
        if (parent and f"{parent}/__init__.py" in tree) or (not last and "/".join(parts[: i + 1]) in base_dirs):
            continue  # a submodule of a package, or a directory the base already has
        if name in protected and (i < len(parts) - 1 or name != part):
            return name
    return None
