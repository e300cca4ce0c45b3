"""Which Python a repository declares (read from its files, setup.py never run) and the choice among the
versions a machine can have."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.env.pyversion import (
    OFFLINE_SUITES,
    REGISTRY_PYTHONS,
    Declared,
    allows,
    choose,
    crash_python,
    fallbacks,
    read_declared,
)
from patcher.errors import SetupFailed

OFFLINE = list(OFFLINE_SUITES)
REGISTRY = list(REGISTRY_PYTHONS)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_nothing_declared(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n", "tox.ini": "[flake8]\n"})
    assert read_declared(tmp_path) == Declared()
    assert choose(Declared(), OFFLINE, "3.11") == ("3.11", "default")


def test_each_place_a_version_is_declared(tmp_path: Path) -> None:
    write(tmp_path, {
        ".python-version": "# pyenv\n3.9.18\n",
        "pyproject.toml": '[project]\nname = "x"\nrequires-python = ">=3.8"\n'
                          'classifiers = ["Programming Language :: Python :: 3.12", "License :: OSI Approved"]\n',
        "setup.cfg": "[metadata]\nclassifiers =\n    Programming Language :: Python :: 3.7\n"
                     "[options]\npython_requires = >=3.6\n",
        "tox.ini": "[tox]\nenvlist = py{36,37}-django{22,32}, py3.10, lint\n"})
    declared = read_declared(tmp_path)
    assert declared.pin == "3.9" and declared.requires == ">=3.8"
    assert declared.tested == ["3.6", "3.7", "3.10", "3.12"]
    assert declared.files == {"pin": ".python-version", "requires": "pyproject.toml",
                              "tested": "pyproject.toml, setup.cfg, tox.ini"}


def test_setup_py_is_read_as_syntax_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write(tmp_path, {"setup.py": f"open({str(marker)!r}, 'w').close()\nfrom setuptools import setup\n"
                                 "PYTHONS = ['3.5', '3.6']\n"
                                 "setup(name='old', python_requires='>=3.5, <3.10',\n"
                                 "      classifiers=['Programming Language :: Python :: ' + v for v in PYTHONS] +\n"
                                 "                  ['Programming Language :: Python :: 3.8'])\n"})
    declared = read_declared(tmp_path)
    assert not marker.exists()
    assert declared.requires == ">=3.5, <3.10" and declared.files["requires"] == "setup.py"
    assert declared.tested == []  # a comprehension is computed, not spelled out: not read


@pytest.mark.parametrize(("declared", "available", "chosen"), [
    # old code tested up to 3.8, no upper bound: the oldest Python after it (collections.Mapping still there)
    (Declared(tested=["2.7", "3.6", "3.7", "3.8"], files={"tested": "setup.py"}), OFFLINE,
     ("3.9", "tested (setup.py)")),
    (Declared(tested=["3.8", "3.9", "3.10", "3.11"], files={"tested": "tox.ini"}), OFFLINE,
     ("3.11", "tested (tox.ini)")),
    (Declared(tested=["3.9", "3.10"], files={"tested": "tox.ini"}), REGISTRY, ("3.10", "tested (tox.ini)")),
    (Declared(requires=">=3.12", files={"requires": "pyproject.toml"}), OFFLINE,
     ("3.13", "requires-python (pyproject.toml)")),
    (Declared(requires=">=3.12", files={"requires": "pyproject.toml"}), REGISTRY,
     ("3.12", "requires-python (pyproject.toml)")),
    (Declared(requires="<3.10", files={"requires": "setup.cfg"}), OFFLINE, ("3.9", "requires-python (setup.cfg)")),
    (Declared(requires=">=3.6", files={"requires": "setup.cfg"}), OFFLINE, ("3.11", "requires-python (setup.cfg)")),
    (Declared(pin="3.13", requires=">=3.9", files={"pin": ".python-version", "requires": "pyproject.toml"}),
     OFFLINE, ("3.13", ".python-version")),
    # a pin this machine cannot have gives way to what requires-python allows
    (Declared(pin="3.10", requires=">=3.10", files={"pin": ".python-version", "requires": "pyproject.toml"}),
     OFFLINE, ("3.11", "requires-python (pyproject.toml)")),
])
def test_the_choice(declared: Declared, available: list[str], chosen: tuple[str, str]) -> None:
    assert choose(declared, available, "3.11") == chosen


def test_a_requested_version_wins_and_one_this_machine_cannot_have_is_refused() -> None:
    declared = Declared(requires=">=3.12", files={"requires": "pyproject.toml"})
    assert choose(declared, OFFLINE, "3.11", "3.9", "--python") == ("3.9", "--python")
    with pytest.raises(SetupFailed) as refused:
        choose(declared, OFFLINE, "3.11", "3.10", "[tool.patcher] python")
    assert str(refused.value).startswith("Python 3.10 ([tool.patcher] python) is not one this machine can provide "
                                         "(3.9, 3.11, 3.13) (offline: 3.9 from Debian bullseye"), refused.value
    assert refused.value.reason == "setup_failed"


def test_no_available_version_allowed_is_setup_failed_naming_the_declaration() -> None:
    declared = Declared(requires=">=3.15", files={"requires": "pyproject.toml"})
    with pytest.raises(SetupFailed) as refused:
        choose(declared, OFFLINE, "3.11")
    assert "requires Python >=3.15 (pyproject.toml) and this machine can provide only 3.9, 3.11, 3.13" in str(
        refused.value)
    assert "pass --python X.Y" in str(refused.value)


@pytest.mark.parametrize(("spec", "version", "allowed"), [
    (">=3.9.1", "3.9", True), ("<3.10", "3.10", False), ("~=3.9", "3.13", True), ("==3.11.*", "3.11", True),
    (">=2.7, !=3.0.*, !=3.1.*", "3.9", True), ("not a specifier", "3.9", True), (None, "3.13", True),
])
def test_requires_python_allows_a_version_when_some_release_of_it_matches(spec: str | None, version: str,
                                                                         allowed: bool) -> None:
    assert allows(spec, version) is allowed


OLD = Declared(tested=["2.7", "3.5"], files={"tested": "setup.py"})


@pytest.mark.parametrize(("text", "found"), [
    ('Traceback (most recent call last):\n  File "/srv/app/x.py", line 3, in f\n'
     '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode\nValueError: x\n',
     ("3.11", "the traceback's paths")),
    ('  File "/home/u/.venv/lib/python3.9/site-packages/foo/a.py", line 1, in f\n'
     '  File "/home/u/.venv/lib/python3.9/site-packages/foo/b.py", line 2, in g\n'
     '  File "/usr/lib/python3.11/x.py", line 2, in g\n', ("3.9", "the traceback's paths")),
    ('  File "C:\\Python312\\Lib\\json\\decoder.py", line 3, in f\n', ("3.12", "the traceback's paths")),
    ("============ test session starts ============\nplatform linux -- Python 3.8.10, pytest-7.4.0, pluggy-1.0\n"
     '  File "/usr/lib/python3.11/x.py", line 2, in g\n', ("3.8", "the traceback's header")),
    ("Python 3.12.1 (CPython, the crash report's runtime)\nTraceback (most recent call last):\n",
     ("3.12", "the traceback's header")),
    ('Traceback (most recent call last):\n  File "app/x.py", line 3, in f\nKeyError: 1\n', None),
    ("Python 3.8 is required by this tool\n", None),
    ('  File "/usr/lib/python2.7/x.py", line 2, in g\n', None),
])
def test_the_python_the_crash_ran_on_is_read_from_its_text(text: str, found: tuple[str, str] | None) -> None:
    assert crash_python(text) == found


def test_the_crashs_python_comes_before_everything_the_repository_declares_but_not_before_the_flag() -> None:
    crash = ("3.11", "the traceback's paths")
    assert choose(OLD, OFFLINE, "3.11", crash=crash) == ("3.11", "the crash's Python (3.11, from the traceback's "
                                                                 "paths)")
    pinned = Declared(pin="3.9", requires="<3.10", files={"pin": ".python-version", "requires": "setup.cfg"})
    assert choose(pinned, OFFLINE, "3.11", "3.13", "[tool.patcher] python", crash)[0] == "3.11"
    assert choose(pinned, OFFLINE, "3.11", "3.13", "--python", crash) == ("3.13", "--python")
    # a version this machine cannot have: the nearest, the newer of two as near (its syntax may be newer)
    assert choose(OLD, OFFLINE, "3.11", crash=("3.10", "the traceback's paths"))[0] == "3.11"
    assert choose(OLD, OFFLINE, "3.11", crash=("3.8", "the traceback's paths"))[0] == "3.9"


def test_the_fallbacks_are_the_other_allowed_versions_nearest_first_and_none_after_a_users_choice() -> None:
    assert fallbacks("3.9", "tested (setup.py)", OLD, OFFLINE) == ["3.11", "3.13"]
    assert fallbacks("3.11", "default", Declared(), OFFLINE) == ["3.9", "3.13"]  # as near: the older first
    assert fallbacks("3.11", "default", Declared(), REGISTRY) == ["3.10", "3.12", "3.9", "3.13"]
    below = Declared(requires="<3.12", files={"requires": "setup.cfg"})
    assert fallbacks("3.11", "requires-python (setup.cfg)", below, OFFLINE) == ["3.9"]
    assert fallbacks("3.9", "--python", OLD, OFFLINE) == []
    assert fallbacks("3.9", "[tool.patcher] python", OLD, OFFLINE) == []
