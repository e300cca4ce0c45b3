"""The allowlist grows by what the repository declares (its manage.py, its tox.ini commands, the test and suite
commands of a flag or `[tool.patcher]`), never by the agent's wish; a runner's suite is its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import SandboxConfig, allowlist_of
from patcher.intake import effective
from patcher.intake.runners import declared_prefixes, runner_prefix, suite_for
from sandbox.commands import check_command

TOX = """[tox]
envlist = py311

[testenv]
deps = mock
commands =
    {envpython} -m tornado.test.runtests {posargs}
    - python scripts/check_docs.py --strict
    make lint
    pytest {posargs}

[testenv:lint]
commands = bash -c "rm -rf /"
"""


@pytest.mark.parametrize(("command", "prefix"), [
    ("python manage.py test app.tests.T.test_x", ["python", "manage.py", "test"]),
    ("python manage.py shell -c 'import os'", None),
    ("python -m tornado.test.runtests tornado.test.web_test", ["python", "-m", "tornado.test.runtests"]),
    ("python3 tests/run.py -v", ["python3", "tests/run.py"]),
    ("python -m pytest -q tests", None),
    ("python -m unittest tests.test_x", None),
    ("python -c 'print(1)'", None),
    ("make test", None),
    ("python -m", None),
    ("python 'unbalanced", None),
])
def test_runner_prefixes(command: str, prefix: list[str] | None) -> None:
    assert runner_prefix(command) == prefix


def test_what_the_repository_declares(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text(TOX)
    (tmp_path / "manage.py").write_text("")
    assert declared_prefixes(tmp_path, ["python -m pkg.selftest x", None]) == [
        ["python", "-m", "pkg.selftest"], ["python", "manage.py", "test"], ["python", "-m", "tornado.test.runtests"],
        ["python", "scripts/check_docs.py"]]


def test_a_linked_manage_py_or_tox_ini_declares_nothing(tmp_path: Path) -> None:
    (tmp_path / "real.ini").write_text(TOX)
    (tmp_path / "tox.ini").symlink_to(tmp_path / "real.ini")
    (tmp_path / "manage.py").symlink_to("/dev/null")
    assert declared_prefixes(tmp_path, []) == []


def test_a_runners_suite_is_its_own(tmp_path: Path) -> None:
    assert suite_for("python manage.py test app.tests.T.test_x", tmp_path) == "python manage.py test"
    assert suite_for("python -m unittest tests.test_x.T.test_y", tmp_path) == "python -m unittest"
    assert suite_for("python -m tornado.test.runtests tornado.test.web_test", tmp_path) == (
        "python -m tornado.test.runtests")
    assert suite_for("python -m pytest -q tests/test_x.py", tmp_path) is None
    (tmp_path / "manage.py").write_text("")
    assert suite_for(None, tmp_path) == "python manage.py test"  # a Django project with no pytest settings
    (tmp_path / "conftest.py").write_text("")
    assert suite_for(None, tmp_path) is None


def test_effective_settings_allow_the_declared_runners_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "manage.py").write_text("")
    (tmp_path / "tox.ini").write_text(TOX)
    settings = effective(tmp_path, "python manage.py test shop.tests.CartTest.test_total", None, None,
                         SandboxConfig())
    assert settings.suite_command == "python manage.py test"
    allowed = allowlist_of(settings.sandbox)
    check_command("python manage.py test shop", allowed)
    check_command("python -m tornado.test.runtests", allowed)
    for wish in ("python manage.py shell", "python manage.py migrate", "python other.py", "make lint",
                 "bash -c 'rm -rf /'", "python -m pip install x"):
        with pytest.raises(ValueError, match="refused"):
            check_command(wish, allowed)
