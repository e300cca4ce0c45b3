"""Warm candidate checks (sandbox/forks.py, sandbox/warm.py): a real tool server on a real repo, pytest
forked from a warm parent that imported the dependencies but never the repository's modules."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.runner import descendants
from tests.support.toolserver import Client, alive, git

TEST = "python -m pytest -q tests/test_calc.py"


def make_repo(repo: Path) -> str:
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text("import json\nimport decimal\n\n\ndef add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "import os\nfrom pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_other():\n    assert add(0, 0) == 0\n\n\n"
        "def test_poison():\n    import sys\n    sys.modules['json'].poisoned = True\n"
        "    os.environ['POISON'] = '1'\n\n\n"
        "def test_clean():\n    import json\n    assert not hasattr(json, 'poisoned') and 'POISON' not in os.environ\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Client]:
    base = make_repo(tmp_path / "repo")
    client = Client(tmp_path / "repo", base, tmp_path / "reports")
    yield client
    client.close()


def test_check_sees_each_edit_of_the_repo_module(box: Client) -> None:
    first = box.call("check", 60, command=f"{TEST}::test_add")
    assert (first.exit_code, first.data["passed"], first.data["failed"]) == (1, [], ["tests/test_calc.py::test_add"])
    box.call("write_file", path="pkg/calc.py", content="def add(a, b):\n    return a + b\n")
    fixed = box.call("check", 60, command=f"{TEST}::test_add")
    assert (fixed.exit_code, fixed.data["passed"], fixed.data["failed"]) == (0, ["tests/test_calc.py::test_add"], [])
    box.call("write_file", path="pkg/calc.py", content="def add(a, b):\n    return a * b\n")
    assert box.call("check", 60, command=f"{TEST}::test_add").exit_code == 1


def test_one_check_cannot_poison_the_next(box: Client) -> None:
    assert box.call("check", 60, command=f"{TEST}::test_poison").exit_code == 0
    assert box.call("check", 60, command=f"{TEST}::test_clean").exit_code == 0


def test_the_warm_parent_survives_the_sweep_and_a_test_run(box: Client) -> None:
    box.call("check", 60, command=f"{TEST}::test_other")
    parents = _warm_parents(box)
    assert parents
    box.call("run_test", 60, command=f"{TEST}::test_other")
    assert all(alive(p) for p in parents)
    started = time.monotonic()
    assert box.call("check", 60, command=f"{TEST}::test_other").exit_code == 0
    assert time.monotonic() - started < 10


def test_a_start_only_check_answers_at_once_and_a_run_test_meanwhile_leaves_it_warm(box: Client) -> None:
    started = box.call("check", 10, command=TEST, start=True)
    assert not started.is_error and started.data == {} and _warm_parents(box)
    box.call("run_test", 60, command=f"{TEST}::test_other")  # the host's coverage run, while it imports
    assert box.call("check", 60, command=f"{TEST}::test_add").data["failed"] == ["tests/test_calc.py::test_add"]
    assert box.call("check", 10, command=TEST, start=True).output == "warm parent starting"  # already there


def test_a_check_that_hangs_is_killed_at_its_deadline(box: Client) -> None:
    box.call("write_file", path="pkg/calc.py", content="def add(a, b):\n    while True:\n        pass\n")
    started = time.monotonic()
    hung = box.call("check", 3, command=f"{TEST}::test_add")
    assert hung.timed_out and hung.is_error and time.monotonic() - started < 15
    box.call("write_file", path="pkg/calc.py", content="def add(a, b):\n    return a + b\n")
    assert box.call("check", 60, command=f"{TEST}::test_add").exit_code == 0


def test_a_dead_parent_is_an_error_then_restarted(box: Client) -> None:
    assert box.call("check", 60, command=f"{TEST}::test_other").exit_code == 0
    for pid in _warm_parents(box):
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    results = [box.call("check", 60, command=f"{TEST}::test_other") for _ in range(2)]
    assert results[-1].exit_code == 0


def test_check_refuses_what_is_not_pytest(box: Client) -> None:
    assert box.call("check", 10, command="python -c 'print(1)'").is_error
    assert box.call("check", 10, command="rm -rf /").is_error


def _warm_parents(box: Client) -> list[int]:
    """The server's warm parents (its descendants running warm.py): never another process of the machine."""
    found = []
    for pid in descendants(box.proc.pid):
        with contextlib.suppress(OSError):
            if b"warm.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def test_a_copy_of_the_repo_package_installed_in_the_box_is_not_what_the_check_runs(tmp_path: Path) -> None:
    """The box may have the library installed (dist-packages): pytest puts the repository first in the
    test process, so the warm parent must not import the installed copy under the same name."""
    import unidiff

    repo = tmp_path / "repo"
    (repo / "unidiff").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "unidiff" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_it.py").write_text("from unidiff import add\n\n\ndef test_add():\n"
                                              "    assert add(2, 3) == 5\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    assert unidiff.__file__ and not unidiff.__file__.startswith(str(repo))  # installed here too
    client = Client(repo, git(repo, "rev-parse", "HEAD"), tmp_path / "reports")
    try:
        command = "python -m pytest -q tests/test_it.py"
        assert client.call("run_test", 60, command=command).exit_code == 1
        assert client.call("check", 60, command=command).exit_code == 1
        client.call("write_file", path="unidiff/__init__.py", content="def add(a, b):\n    return a + b\n")
        assert client.call("check", 60, command=command).exit_code == 0
    finally:
        client.close()
