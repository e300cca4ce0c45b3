"""The integrity policy on real `git diff` output: what a fix may touch before any test of it is believed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from patcher.verify.policy import rules as policy
from patcher.verify.policy.rules import check_diff
from tests.support.helpers import git, make_repo

BASE = {"pkg/__init__.py": "", "pkg/core.py": "def f(x):\n    return x + 1\n",
        "tests/test_core.py": "from pkg.core import f\n\n\ndef test_f():\n    assert f(1) == 2\n",
        "tests/conftest.py": "", "setup.cfg": "[metadata]\nname = pkg\n", "tool.sh": "echo hi\n"}
Change = Callable[[Path], None]


def diff_after(tmp_path: Path, change: Change) -> tuple[str, list[str]]:
    repo = make_repo(tmp_path / "r", BASE)
    files = git(repo, "ls-files").splitlines()
    change(repo)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "--binary", "HEAD") + "\n", files


def write(rel: str, text: str) -> Change:
    def change(repo: Path) -> None:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return change


def test_a_source_fix_and_a_new_test_pass(tmp_path: Path) -> None:
    def change(repo: Path) -> None:
        write("pkg/core.py", "def f(x):\n    return x + 2\n")(repo)
        write("tests/test_new_repro.py", "def test_new():\n    assert True\n")(repo)
    diff, files = diff_after(tmp_path, change)
    got = check_diff(diff, files)
    assert got.ok, got.violations
    assert got.files_changed == ["pkg/core.py", "tests/test_new_repro.py"]
    assert got.added_tests == ["tests/test_new_repro.py"]


@pytest.mark.parametrize("change,expected", [
    (write("tests/test_core.py", "def test_f():\n    pass\n"), "tests/test_core.py: existing tests may not be"),
    (lambda r: os.remove(r / "tests/test_core.py"), "tests/test_core.py: existing tests may not be deleted"),
    (lambda r: os.rename(r / "tests/test_core.py", r / "tests/test_gone.py"), "tests/test_core.py: existing tests"),
    (write("tests/conftest.py", "collect_ignore = ['test_core.py']\n"), "tests/conftest.py: conftest files"),
    (write("conftest.py", "x = 1\n"), "conftest.py: conftest files"),
    (write("pytest.ini", "[pytest]\naddopts = -k 'not f'\n"), "pytest.ini: conftest files"),
    (write("setup.cfg", "[tool:pytest]\naddopts = -x\n"), "setup.cfg: conftest files"),
    (write(".github/workflows/ci.yml", "on: push\n"), ".github/workflows/ci.yml: conftest files"),
    (write("pkg/evil.pth", "import os\n"), "pkg/evil.pth: conftest files"),
    (lambda r: os.symlink("/etc/passwd", r / "pkg/link"), "symbolic links and submodules may not be added"),
    (lambda r: os.chmod(r / "tool.sh", 0o755), "tool.sh: file modes may not change"),
    (write("pkg/blob.bin", "\0\1\2binary\0"), "binary"),
    (write("pkg/plug.py", "def pytest_collection_modifyitems(items):\n    items.clear()\n"), "pytest plugin or hook"),
])
def test_forbidden_changes_are_named(tmp_path: Path, change: Change, expected: str) -> None:
    diff, files = diff_after(tmp_path, change)
    got = check_diff(diff, files)
    assert not got.ok and any(expected in v for v in got.violations), got.violations


@pytest.mark.parametrize("path,expected", [
    ("../outside.py", "paths may not contain '..'"),
    ("/etc/cron.d/x", "absolute paths are not allowed"),
    (".git/hooks/pre-commit", "nothing under .git may change"),
    ("pkg/.GIT/config", "nothing under .git may change"),
])
def test_hand_made_paths_out_of_the_tree_are_refused(path: str, expected: str) -> None:
    diff = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    got = check_diff(diff, [])
    assert not got.ok and any(expected in v for v in got.violations), got.violations


def test_a_submodule_is_refused() -> None:
    diff = ("diff --git a/vendor b/vendor\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n"
            "+++ b/vendor\n@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n")
    assert not check_diff(diff, []).ok


def test_size_cap_and_garbage(tmp_path: Path) -> None:
    diff, files = diff_after(tmp_path, write("pkg/core.py", "x = 1\n" * 50_000))
    capped = check_diff(diff, files, max_bytes=10_000)
    assert not capped.ok and "the limit is 10000" in capped.violations[0]
    assert not check_diff("this is not a diff\n", files).ok
    assert check_diff("", files).ok and check_diff("", files).files_changed == []


def test_tests_only_keeps_new_test_files_and_nothing_else(tmp_path: Path) -> None:
    def change(repo: Path) -> None:
        write("pkg/core.py", "def f(x):\n    return x + 2\n")(repo)
        write("tests/test_new_repro.py", "def test_new():\n    assert True\n")(repo)
        write("tests/conftest.py", "x = 1\n")(repo)
    diff, _ = diff_after(tmp_path, change)
    only = policy.tests_only(diff)
    assert "tests/test_new_repro.py" in only and "pkg/core.py" not in only and "conftest" not in only
    assert policy.tests_only("garbage") == ""


def tree_after(tmp_path: Path, diff: str) -> list[str]:
    """check_tree's violations for `diff` applied by git to a copy of BASE (what the verifier does)."""
    from patcher.intake import stage_repo
    from patcher.verify.check import apply_diff
    staged = stage_repo(str(make_repo(tmp_path / "t", BASE)))
    try:
        tree, changes = apply_diff(staged, diff)
        tree.cleanup()
        return policy.check_tree(changes, staged.files, policy.protected_names(["yaml"]))
    finally:
        staged.cleanup()


def quoted_new_file(name: str, text: str, mode: str = "100644") -> str:
    return (f'diff --git "a/{name}" "b/{name}"\nnew file mode {mode}\n--- /dev/null\n+++ "b/{name}"\n'
            f"@@ -0,0 +1 @@\n+{text}\n")


@pytest.mark.parametrize("name,needle", [("conftest\\056py", "conftest.py: conftest files"),
                                         ("\\056gitignore", ".gitignore: conftest files"),
                                         ("pkg/\\056pytest.ini", "pkg/.pytest.ini: conftest files")])
def test_the_tree_check_reads_quoted_names_as_git_applies_them(tmp_path: Path, name: str, needle: str) -> None:
    diff = quoted_new_file(name, "x = 1")
    assert not check_diff(diff, BASE).ok  # the text layer refuses quoting outright
    assert any(needle in v for v in tree_after(tmp_path, diff))


@pytest.mark.parametrize("path", ["yaml.py", "yaml/__init__.py", "os.py", "tests/json.py", "pytest/main.py",
                                  "src/unittest.py", "pluggy.py", "_pytest/x.py"])
def test_new_modules_may_not_take_protected_import_names(tmp_path: Path, path: str) -> None:
    diff = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            "@@ -0,0 +1 @@\n+x = 1\n")
    assert any("would shadow" in v for v in tree_after(tmp_path, diff)), path


@pytest.mark.parametrize("path", ["pkg/json.py", "pkg/os.py", "tests/test_json.py", "helpers/yaml_tools.py"])
def test_submodules_and_other_names_are_fine(tmp_path: Path, path: str) -> None:
    diff = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            "@@ -0,0 +1 @@\n+x = 1\n")
    assert tree_after(tmp_path, diff) == []


@pytest.mark.parametrize("name", ["pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml",
                                  "tox.ini", "setup.cfg", "setup.py", "requirements.txt", "requirements-dev.txt",
                                  "constraints.txt", ".gitignore", ".gitattributes", "Pipfile"])
def test_every_pytest_config_and_packaging_file_is_configuration(name: str) -> None:
    assert policy.is_config_path(name) and policy.is_config_path(f"sub/{name}")


def test_a_symlink_in_octal_spelling_is_refused_by_the_text_and_the_tree(tmp_path: Path) -> None:
    diff = ("diff --git a/link.py b/link.py\nnew file mode 0120000\n--- /dev/null\n+++ b/link.py\n"
            "@@ -0,0 +1 @@\n+pkg/core.py\n\\ No newline at end of file\n")
    assert not check_diff(diff, BASE).ok
    assert any("symbolic links" in v for v in tree_after(tmp_path, diff))


def test_a_file_the_base_suite_ran_as_a_test_is_a_test_whatever_its_name(tmp_path: Path) -> None:
    from patcher.intake import stage_repo
    from patcher.verify.check import apply_diff
    staged = stage_repo(str(make_repo(tmp_path / "t", {**BASE, "checks/check_core.py": "def test_c():\n    pass\n"})))
    diff = ("diff --git a/checks/check_core.py b/checks/check_core.py\n--- a/checks/check_core.py\n"
            "+++ b/checks/check_core.py\n@@ -1,2 +1,2 @@\n def test_c():\n-    pass\n+    return\n")
    try:
        tree, changes = apply_diff(staged, diff)
        tree.cleanup()
    finally:
        staged.cleanup()
    names = policy.protected_names([])
    assert policy.check_tree(changes, staged.files, names) == []  # by name alone it looks like source
    known = policy.check_tree(changes, staged.files, names, frozenset({"checks/check_core.py"}))
    assert any("existing tests may not be modified" in v for v in known)
