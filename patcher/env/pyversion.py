"""Which Python a repository's boxes run: what its files declare, and the choice among the versions this
machine can have. Files are only read (setup.py with `ast`), never run.

Declared, strongest first:
    pin        `.python-version` (pyenv, uv): the X.Y of its first line
    requires   `requires-python` of pyproject.toml, else `python_requires` of setup.cfg or setup.py
    tested     hints: the `pyXY` factors of tox.ini's envlist and the `Programming Language :: Python :: X.Y`
               classifiers (pyproject.toml, setup.cfg, setup.py)

The choice (`choose`): `--python` is taken as is; then the Python the crash ran on (`crash_python`: pytest's
header or a crash report's runtime line, else the interpreter directories of the traceback's frames), or the
available version nearest it; then `[tool.patcher] python`. Otherwise, among the available versions that
`requires` allows: the pin; else the tested version nearest the default (the default itself when tested); else,
when no tested version is available, the one nearest the tested range (old code tested up to 3.7 gets the oldest
available after it); else the default, or the allowed version nearest it. None allowed is `setup_failed`, naming
the declaration and what is available.
When the choice cannot set the project up or import it, `fallbacks` says which versions come next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from patcher.env.pysource import cfg_of, read_small, setup_kwargs, toml_of
from patcher.errors import SetupFailed

OFFLINE_SUITES = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
"""The Debian release whose python3 is each version: the Pythons a machine without a registry can have."""
REGISTRY_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13")
"""The `python:X.Y-slim` images boxes run when a registry answers (the sandbox code runs on 3.9 and later)."""
_VERSION = re.compile(r"^(?:python|cpython-?)?(\d)\.(\d{1,2})(?:\.\d+)?\b", re.I)
_TOX_FACTOR = re.compile(r"\bpy(\d)\.?(\d{1,2})\b")
_TOX_BRACES = re.compile(r"\bpy\{([^}]*)\}")
_CLASSIFIER = re.compile(r"^Programming Language :: Python :: (\d)\.(\d{1,2})$")
_CRASH_HEADER = re.compile(r"^(?:platform \S+ -- )?Python (\d)\.(\d{1,2})(?:\.\d+\S*)?(?:,| \(|\s*$)", re.M)
"""pytest's session header (`platform linux -- Python 3.11.2, pytest-7.2.1`), or the line a crash report's
runtime context is rendered as (`Python 3.11.4 (CPython, the crash report's runtime)`: patcher/crash)."""
_CRASH_PATH = re.compile(r'File "[^"]*?[/\\](?:lib[/\\])?python(\d)\.?(\d{1,2})[/\\]|[\\/]Python(\d)(\d{1,2})[\\/]',
                         re.I)
"""A frame's file under an interpreter's own directory: `/usr/lib/python3.11/…`, a venv's
`lib/python3.9/site-packages/…`, Windows' `C:\\Python311\\Lib\\…`."""


@dataclass
class Declared:
    """What a repository says about its Python, and in which file."""

    pin: str | None = None
    requires: str | None = None
    tested: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """Which file each of pin, requires and tested came from."""

    def as_json(self) -> dict[str, Any]:
        shown = {"pin": self.pin, "requires": self.requires, "tested": self.tested or None}
        return {k: v for k, v in shown.items() if v} | ({"files": self.files} if self.files else {})


def read_declared(tree: Path) -> Declared:
    """What the files at the top of `tree` declare (symlinks and oversized files are not read)."""
    files = {name: read_small(tree / name) for name in (".python-version", "pyproject.toml", "setup.cfg", "setup.py",
                                                   "tox.ini")}
    declared = Declared()
    pin = next((m for line in files[".python-version"].splitlines() if (m := _VERSION.match(line.strip()))), None)
    if pin:
        declared.pin, declared.files["pin"] = f"{pin[1]}.{pin[2]}", ".python-version"
    project = toml_of(files["pyproject.toml"]).get("project", {})
    project = project if isinstance(project, dict) else {}
    cfg = cfg_of(files["setup.cfg"])
    setup = setup_kwargs(files["setup.py"].encode()) if files["setup.py"] else {}
    requires = [("pyproject.toml", project.get("requires-python")),
                ("setup.cfg", cfg.get("options", "python_requires", fallback=None)),
                ("setup.py", setup.get("python_requires"))]
    for name, spec in requires:
        if isinstance(spec, str) and spec.strip():
            declared.requires, declared.files["requires"] = spec.strip(), name
            break
    tested = {name: _classifiers(classifiers) for name, classifiers in (
        ("pyproject.toml", project.get("classifiers")), ("setup.cfg", cfg.get("metadata", "classifiers", fallback="")),
        ("setup.py", setup.get("classifiers")))}
    tested["tox.ini"] = _tox_versions(_envlist(files["tox.ini"]))
    hints = sorted({v for versions in tested.values() for v in versions}, key=version_key)
    if hints:
        declared.tested = hints
        declared.files["tested"] = ", ".join(name for name, versions in tested.items() if versions)
    return declared


def crash_python(traceback: str) -> tuple[str, str] | None:
    """(X.Y, where it was read) of the Python the crash ran on: a header naming it, else the version most of the
    traceback's frames under an interpreter's directory name; None when the text does not say."""
    header = _CRASH_HEADER.search(traceback)
    if header:
        return f"{header[1]}.{header[2]}", "the traceback's header"
    seen: dict[str, int] = {}
    for m in _CRASH_PATH.finditer(traceback):
        version = f"{m[1] or m[3]}.{m[2] or m[4]}"
        seen[version] = seen.get(version, 0) + 1
    if not seen or not all(v.startswith("3.") for v in seen):
        return None
    return max(seen, key=lambda v: seen[v]), "the traceback's paths"


def choose(declared: Declared, available: list[str], default: str, requested: str | None = None,
           requested_from: str = "flag", crash: tuple[str, str] | None = None) -> tuple[str, str]:
    """(version, where the choice came from); SetupFailed when no available version is allowed. `crash`:
    (X.Y, where read) of the Python the crash ran on, taken after `--python` and before everything else."""
    shown = ", ".join(available)
    if requested and (requested_from == "--python" or not crash):
        if requested not in available:
            raise SetupFailed(f"Python {requested} ({requested_from}) is not one this machine can provide ({shown})"
                              f"{offline_note(available)}")
        return requested, requested_from
    allowed = [v for v in available if allows(declared.requires, v)]
    if crash:
        # it ran there: a requires-python that says otherwise is out of date
        version = crash[0] if crash[0] in available else _nearest(allowed or available, crash[0], newer=True)
        return version, f"the crash's Python ({crash[0]}, from {crash[1]})"
    if not allowed:
        raise SetupFailed(f"the repository requires Python {declared.requires} ({declared.files.get('requires')}) "
                          f"and this machine can provide only {shown}{offline_note(available)}; pass --python X.Y "
                          "(or [tool.patcher] python) to run it on one of those anyway")
    if declared.pin in allowed:
        return declared.pin, declared.files["pin"]
    tested = [v for v in declared.tested if v.startswith("3.")]
    if tested:
        source = f"tested ({declared.files['tested']})"
        both = [v for v in allowed if v in tested]
        if both:
            return _nearest(both, default), source
        low, high = version_key(tested[0]), version_key(tested[-1])
        return min(allowed, key=lambda v: (_distance(v, low, high), -version_key(v)[1])), source
    source = f"requires-python ({declared.files['requires']})" if declared.requires else "default"
    return _nearest(allowed, default), source


def fallbacks(first: str, source: str, declared: Declared, available: list[str]) -> list[str]:
    """The versions tried after `first` when it cannot set the project up or import it: none when the user
    named it (`--python`, `[tool.patcher] python`); else the others the declared range allows, nearest first
    (an older one before a newer one as near: old code breaks on removed APIs more often than on new syntax)."""
    if source in ("--python", "[tool.patcher] python"):
        return []
    allowed = [v for v in available if v != first and allows(declared.requires, v)]
    return sorted(allowed, key=lambda v: (abs(version_key(v)[1] - version_key(first)[1]), version_key(v)))


def allows(requires: str | None, version: str) -> bool:
    """Whether some release of X.Y meets `requires` (an unparsable one allows everything: pip will say)."""
    if not requires:
        return True
    try:
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        return True
    return any(spec.contains(f"{version}.{patch}", prereleases=True) for patch in (0, 99))


def version_key(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int(minor or 0)


def offline_note(available: list[str]) -> str:
    if set(available) <= set(OFFLINE_SUITES):
        suites = ", ".join(f"{v} from Debian {s}" for v, s in OFFLINE_SUITES.items())
        return f" (offline: {suites}; with a registry, python:X.Y-slim)"
    return ""


def _nearest(versions: list[str], target_version: str, newer: bool = True) -> str:
    """The version nearest `target_version`; of two as near, the newer (`newer`) or the older."""
    target = version_key(target_version)
    return min(versions, key=lambda v: (abs(version_key(v)[1] - target[1]), -version_key(v)[1] if newer
                                        else version_key(v)[1]))


def _distance(version: str, low: tuple[int, int], high: tuple[int, int]) -> int:
    minor = version_key(version)[1]
    return max(low[1] - minor, minor - high[1], 0)





def _classifiers(classifiers: object) -> list[str]:
    lines = classifiers.splitlines() if isinstance(classifiers, str) else classifiers
    if not isinstance(lines, list):
        return []
    return [f"{m[1]}.{m[2]}" for line in lines if isinstance(line, str) and (m := _CLASSIFIER.match(line.strip()))]


def _tox_versions(envlist: str) -> list[str]:
    """`py39`, `py3.10`, and `py{37,38}` factors of an envlist."""
    found = {f"{m[1]}.{m[2]}" for m in _TOX_FACTOR.finditer(envlist)}
    for braces in _TOX_BRACES.finditer(envlist):
        found |= {f"{item[0]}.{item[1:]}" for item in (i.strip() for i in braces[1].split(","))
                  if re.fullmatch(r"\d\d{1,2}", item)}
    return sorted(found, key=version_key)


def _envlist(text: str) -> str:
    cfg = cfg_of(text)
    return cfg.get("tox", "envlist", fallback="") if cfg.has_section("tox") else ""
