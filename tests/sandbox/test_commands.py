"""One table knows a test runner (sandbox/commands.py): the host's judging, the allowlist's growth and the box's
harness all read `runner_of`, so they cannot disagree on what a command runs."""

from __future__ import annotations

import pytest

from patcher.intake.runners import runner_prefix
from patcher.verify import command_kind
from sandbox.commands import DEFAULT_ALLOWLIST, RUNNERS, runner_of
from sandbox.evidence import harness_argv


@pytest.mark.parametrize(("command", "name", "prefix"), [
    ("pytest -q tests", "pytest", "pytest"),
    ("pytest -m pytest", "pytest", "pytest"),  # a marker named pytest
    ("python -m pytest -x", "pytest", "python -m pytest"),
    ("python3.11 -m pytest", "pytest", "python3.11 -m pytest"),
    ("python3 -m unittest discover", "unittest", "python3 -m unittest"),
    ("python -c print(1)", "python-c", "python -c"),
    ("python manage.py test shop", "django", "python manage.py test"),
    ("python src/manage.py test", "django", "python src/manage.py test"),
    ("python -m tornado.test.runtests web_test", "script", "python -m tornado.test.runtests"),
    ("python3 tests/run.py -v", "script", "python3 tests/run.py"),
    ("python tests/mymanage.py test", "script", "python tests/mymanage.py"),
])
def test_a_runner_is_named_with_where_its_own_arguments_start(command: str, name: str, prefix: str) -> None:
    argv = command.split()
    runner = runner_of(argv)
    assert runner is not None and runner.name == name and argv[:runner.start] == prefix.split()
    assert command_kind(argv) == name


@pytest.mark.parametrize("command", ["", "python", "python -m", "python -m -x", "python manage.py shell",
                                     "make test", "tox -e py311", "node run.py", "python -W error x"])
def test_what_no_runner_runs(command: str) -> None:
    assert runner_of(command.split()) is None and command_kind(command.split()) == "other"
    assert runner_prefix(command) is None


def test_the_default_allowlist_is_the_default_runners_spelled_with_python_and_python3() -> None:
    assert DEFAULT_ALLOWLIST == (("python", "-m", "pytest"), ("python3", "-m", "pytest"), ("pytest",),
                                 ("python", "-m", "unittest"), ("python3", "-m", "unittest"), ("python", "-c"),
                                 ("python3", "-c"))
    assert not any(r.default and r.own for r in RUNNERS)  # a project's own runner is allowed when declared


@pytest.mark.parametrize(("command", "harnessed"), [
    ("python -m pytest -q", "python -m pytest -q"),  # the plugin comes through PYTEST_ADDOPTS
    ("pytest -m unittest", "pytest -m unittest"),
    ("python -m unittest discover -s t", "python -m patcher_unittest discover -s t"),
    ("python manage.py test shop", "python -m patcher_runner manage.py test shop"),
    ("python -m pkg.runtests a", "python -m patcher_runner -m pkg.runtests a"),
    ("python -c pass", "python -c pass"),
    ("make test", "make test"),
])
def test_each_runner_enters_its_harness_as_its_entry_says(command: str, harnessed: str) -> None:
    assert harness_argv(command.split()) == harnessed.split()
