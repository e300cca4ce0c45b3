"""Where projects keep their test requirements: read (never run) from the staging copy, in this order.

    1. requirement files: `requirements.txt` and `requirements/{base,common,main,…}.txt` (the runtime), then
       every `*.txt` whose name has `requirements` (or `reqs`) and a test word: `test_requirements.txt`,
       `requirements-dev.txt`, `requirements_dev.txt`, `dev-requirements.txt`, …, then those in `requirements/`
       (or `reqs/`) named with a test word (`requirements/test.txt`), then `test/`, `tests/`, `testing/`
       `requirements*.txt`
    2. the project itself with its test extras: `[project.optional-dependencies]`, setup.cfg
       `[options.extras_require]`, setup.py `extras_require` (read with ast)
    3. single requirements: PEP 735 `[dependency-groups]` (`{include-group}` followed), setup.cfg `tests_require`,
       setup.py `tests_require`, tox.ini `[testenv]` `deps`, the `session.install(...)` of noxfile.py sessions

A test word is one of EnvConfig.extras (test, tests, testing, dev, …) among the name's words; nox sessions
may also be named `unit` or `pytest`. A `-r FILE` or `.[extra]` in tox deps or a nox session joins 1 or 2.
tox's factor-conditional deps (`py27: mock`) and substitutions other than `{toxinidir}` and `{[section]key}`
are left out, and so is any requirement that does not parse as one.
"""

from __future__ import annotations

import configparser
import posixpath
import re
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from patcher.env.pysource import cfg_of, nox_installs, read_small, setup_kwargs, toml_of, words

RUNTIME = ("base", "common", "main", "default", "install", "runtime", "requirements", "prod", "production")
"""Names (stems) of runtime requirement files in a `requirements/` folder."""
NOX_WORDS = ("unit", "pytest")
_PROJECT = re.compile(r"^(?:-e\s*)?(?:\.|\{toxinidir\})/?(?:\[([^\]]*)\])?$")


@dataclass
class Found:
    """What the repository's files ask to install for its tests, and where each came from."""

    files: list[str] = field(default_factory=list)
    """Requirement files, installed with -r in this order (paths relative to the repo)."""
    extras: list[tuple[str, str]] = field(default_factory=list)
    """(extra of the repository's own project, where it was read)."""
    loose: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, where it was read), installed from one file the setup writes."""
    project: bool = False
    """Whether a tox or nox dep installs the project itself (`-e .`)."""
    named: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, where) of each test extra's requirements: installed with the project, named when they fail."""
    read: list[str] = field(default_factory=list)
    """Every file that gave something, in the order read."""

    def note(self, where: str) -> None:
        name = where.split(" ", 1)[0]
        if name not in self.read:
            self.read.append(name)


def find(repo: Path, test_words: list[str]) -> Found:
    """Everything the files of `repo` ask to install for its tests (see the module docstring for the order)."""
    wanted = {w for name in test_words for w in words(name)}
    found = Found()
    for rel in requirement_files(repo, wanted):
        found.files.append(rel)
        found.note(rel)
    project = toml_of(read_small(repo / "pyproject.toml"))
    cfg = cfg_of(read_small(repo / "setup.cfg"))
    setup_py = setup_kwargs(read_small(repo / "setup.py").encode())
    extras = [("pyproject.toml", project.get("project", {}).get("optional-dependencies", {})),
              ("setup.cfg", dict(cfg.items("options.extras_require")) if cfg.has_section("options.extras_require")
               else {}),
              ("setup.py", setup_py.get("extras_require", {}))]
    if "extras_require" not in setup_py:  # computed: the test words setup.py spells as strings
        text = read_small(repo / "setup.py")
        extras.append(("setup.py", {w: [] for w in test_words if f'"{w}"' in text or f"'{w}'" in text}))
    for name, table in extras:
        for extra, reqs in table.items() if isinstance(table, dict) else ():
            if set(words(extra)) & wanted:
                _add_extra(found, extra, name)
                lines = _lines(reqs) if isinstance(reqs, str) else reqs if isinstance(reqs, list) else []
                found.named += [(r, f"{name} extra [{extra}]") for r in lines if isinstance(r, str)]
    _add_groups(found, project.get("dependency-groups", {}), wanted)
    _add_loose(found, _lines(cfg.get("options", "tests_require", fallback="")), "setup.cfg tests_require")
    tests_require = setup_py.get("tests_require", [])
    _add_loose(found, tests_require if isinstance(tests_require, list) else [], "setup.py tests_require")
    _add_args(found, repo, tox_deps(read_small(repo / "tox.ini")), "tox.ini [testenv] deps")
    for session, args in nox_installs(read_small(repo / "noxfile.py").encode(), (*wanted, *NOX_WORDS)):
        _add_args(found, repo, args, f"noxfile.py session {session}")
    return found


def requirement_files(repo: Path, wanted: set[str]) -> list[str]:
    """The runtime and test requirement files of `repo`, in the documented order (symlinks are not followed)."""
    root: list[str] = []
    runtime: list[str] = []
    test: list[str] = []
    for folder in ("", "requirements", "reqs", "test", "tests", "testing"):
        for path in sorted((repo / folder).glob("*.txt")) if _inside(repo, repo / folder) else []:
            if not _inside(repo, path) or path.is_symlink():
                continue
            rel, name = path.relative_to(repo).as_posix(), set(words(path.stem))
            named = bool(name & {"requirements", "requirement", "reqs"})
            if folder == "" and path.stem == "requirements":
                root.append(rel)
            elif folder in ("requirements", "reqs") and path.stem in RUNTIME:
                runtime.append(rel)
            elif (folder in ("", "test", "tests", "testing") and named and (folder or name & wanted)) or (
                    folder in ("requirements", "reqs") and name & wanted):
                test.append(rel)
    return [*root, *runtime, *test]


def nested(repo: Path, rel: str) -> tuple[list[str], bool]:
    """The files a requirement file names with -r/-c (relative to the repo, existing and inside it), and whether
    it names anything else local: a path, an editable, a file: URL, a find-links directory, an unknown file."""
    found, local = [], False
    for line in read_small(repo / rel).splitlines():
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith("#"):
            continue
        option, _, value = text.replace("=", " ", 1).partition(" ")
        value = value.strip()
        if option in ("-r", "--requirement", "-c", "--constraint") or (text.startswith(("-r", "-c")) and not value):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), value or text[2:].strip()))
            if _inside(repo, repo / target) and (repo / target).is_file() and not (repo / target).is_symlink():
                found.append(target)
            else:
                local = True
        elif option in ("-i", "--index-url", "--extra-index-url", "--trusted-host", "--pre", "--prefer-binary"):
            local = local or "file:" in value
        else:
            local = local or text.startswith(("-", ".", "/", "~")) or "file:" in text or "\\" in text
    return found, local


def origins(found: Found, repo: Path, files: list[str]) -> dict[str, list[str]]:
    """Canonical project name -> the places that name it (requirement files and the single requirements)."""
    named: dict[str, list[str]] = {}
    pairs = [(line, f"{rel}, line {n}") for rel in files
             for n, line in enumerate(read_small(repo / rel).splitlines(), 1)] + found.loose + found.named
    for line, where in pairs:
        name = requirement_name(line)
        if name and where not in named.setdefault(name, []):
            named[name].append(where)
    return named


def requirement_name(line: str) -> str | None:
    """The canonical project name a requirement line names, or None (an option, a path, not a requirement)."""
    text = line.split(" #", 1)[0].strip()
    if not text or text.startswith(("#", "-", ".", "/")):
        return None
    with suppress(InvalidRequirement):
        return canonicalize_name(Requirement(text).name)
    return None


def tox_deps(text: str) -> list[str]:
    """The unconditional `deps` of tox.ini's [testenv], `{toxinidir}` and `{[section]key}` substituted."""
    cfg = cfg_of(text)
    if not cfg.has_option("testenv", "deps"):
        return []
    out, lines = [], _lines(cfg.get("testenv", "deps"))
    for _ in range(20):  # a line that is a `{[section]key}` reference stands for that key's lines
        expanded = [x for line in lines for x in _reference(cfg, line)]
        if expanded == lines:
            break
        lines = expanded
    for line in lines:
        line = line.replace("{toxinidir}/", "").replace("{toxinidir}", ".")
        if re.match(r"^[\w.,{}!-]+:\s", line) or "{" in line:
            continue  # a factor-conditional dep (`py27: mock`), or a substitution not read statically
        out.append(line)
    return out


def _reference(cfg: configparser.RawConfigParser, line: str) -> list[str]:
    ref = re.fullmatch(r"\{\[([^\]]+)\]([^}]+)\}", line)
    return _lines(cfg.get(ref[1], ref[2], fallback="")) if ref else [line]


def _add_args(found: Found, repo: Path, args: list[str], where: str) -> None:
    """tox deps or a nox install's arguments: `-r FILE`, the project (`.[x]`, `-e .`), or requirements."""
    items = iter(args)
    for arg in items:
        arg = arg.strip()
        target = next(items, "") if arg in ("-r", "--requirement") else arg[2:].strip() if arg.startswith("-r") else ""
        project = _PROJECT.match(arg if arg != "-e" else f"-e {next(items, '')}")
        if target:
            rel = posixpath.normpath(target)
            if _inside(repo, repo / rel) and (repo / rel).is_file() and rel not in found.files:
                found.files.append(rel)
                found.note(where)
        elif project:
            found.project = True
            for extra in (project[1] or "").split(","):
                _add_extra(found, extra.strip(), where)
            found.note(where)
        elif not arg.startswith("-"):
            _add_loose(found, [arg], where)


def _add_extra(found: Found, extra: str, where: str) -> None:
    if extra and extra not in {e for e, _ in found.extras}:
        found.extras.append((extra, where))
        found.note(where)


def _add_groups(found: Found, groups: Any, wanted: set[str]) -> None:
    if not isinstance(groups, dict):
        return
    for name in groups:
        if set(words(name)) & wanted:
            _add_loose(found, _group(groups, name, set()), f"pyproject.toml [dependency-groups] {name}")


def _group(groups: dict[str, Any], name: str, seen: set[str]) -> list[str]:
    """A dependency group's requirements, its `{include-group = "…"}` entries followed (once each)."""
    seen.add(name)
    out: list[str] = []
    for entry in groups.get(name, []) if isinstance(groups.get(name), list) else []:
        included = entry.get("include-group") if isinstance(entry, dict) else None
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(included, str) and included not in seen:
            out += _group(groups, included, seen)
    return out


def _add_loose(found: Found, requirements: list[Any], where: str) -> None:
    for text in requirements:
        if isinstance(text, str) and requirement_name(text) and text.strip() not in {r for r, _ in found.loose}:
            found.loose.append((text.strip(), where))
            found.note(where)


def _lines(value: str) -> list[str]:
    return [line.split(" #", 1)[0].strip() for line in value.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _inside(repo: Path, path: Path) -> bool:
    return path.exists() and path.resolve().is_relative_to(repo.resolve())
