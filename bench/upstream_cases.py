"""The corpus of real upstream bug fixes (bench/upstream_cases.toml), read and checked for shape.

Each case is a bug fixed in a project's own git history (the commit named for provenance, found in the
project's history; no published bug benchmark) that the bench rebuilds from PyPI sdists at run time
(bench/upstream_build.py): the buggy release, the fix's own test from the fixed release, and the fix as the
fixed release's functions (`fix`) or as quoted old→new lines (`edits`). No fetched code is in the repository.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).with_name("upstream_cases.toml")
KINDS = ("crash", "assertion")
WRONG_VALUE = ("AssertionError", "Failed")
"""What a wrong-value test raises: an assert, or pytest's own failure (`pytest.raises` that did not raise)."""
PYTHONS = ("3.9", "3.11", "3.13")
RUNNERS = ("pytest", "unittest")
SHA = re.compile(r"[0-9a-f]{40}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
VERSION = re.compile(r"[0-9][0-9A-Za-z.+-]*")
NODE = re.compile(r"[\w./-]+\.py::[\w:]+")
DEF = re.compile(r"[\w./-]+\.py::[\w.]+")


@dataclass(frozen=True)
class Edit:
    """One quoted old→new replacement in `path` (the old text occurs once in the buggy release)."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Case:
    """One real historical bug and its upstream fix."""

    id: str
    project: str
    """The project's name as the bench groups cases."""
    dist: str
    """The PyPI distribution whose sdists (with tests) are fetched."""
    buggy: str
    """The release with the bug (its sdist is the base)."""
    fixed: str
    """The first release with the fix (its sdist gives the test, and the functions in `fix`)."""
    repo: str
    """owner/name of the project's public repository, for provenance."""
    commit: str
    """The upstream fix commit (40 hex digits)."""
    date: str
    """The fix commit's date (YYYY-MM-DD)."""
    kind: str
    """crash (the test raises an exception in library code) or assertion (a wrong value)."""
    exception: str
    """The exception the fix's test raises on the buggy release (AssertionError for a wrong value)."""
    tests: tuple[str, ...]
    """pytest node ids of the fix's test(s), taken from the fixed release's test file."""
    files: tuple[str, ...] = ()
    """Test data files the fix's test reads, copied whole from the fixed release."""
    fix: tuple[str, ...] = ()
    """`path::Qual.name` of each function or method the fixed release's version replaces."""
    edits: tuple[Edit, ...] = ()
    """Or the fix as quoted lines."""
    python: str = "3.11"
    """The Python the buggy release's tests run on (3.9 for code using APIs removed since)."""
    suite: str | None = None
    """The pass-to-pass suite, when the whole `python -m pytest -q` is not usable."""
    setup: str | None = None
    """A setup command for what the repository's files do not declare."""
    deps: tuple[str, ...] = ()
    """Test requirements the host check installs beside pytest."""
    real_projects: bool = False
    """In the real-projects bench (issue 35) as well as the honest corpus (issue 34)."""
    runner: str = "pytest"
    """How the project runs its tests: pytest, or unittest (`python -m unittest pkg.test_x.Case.test_y`)."""
    ask_python: bool = True
    """The bench names `python` to the job (as --python); false: patcher chooses, as for a user who names none
    (from the traceback, then what the repository declares)."""
    note: str = ""

    @property
    def test_command(self) -> str:
        if self.runner == "unittest":
            return "python -m unittest " + " ".join(unittest_id(t) for t in self.tests)
        return "python -m pytest -q " + " ".join(shlex.quote(t) for t in self.tests)


def unittest_id(node: str) -> str:
    """`pkg/test/test_x.py::Case::test_y` as unittest names it: `pkg.test.test_x.Case.test_y`."""
    path, _, rest = node.partition("::")
    return ".".join([*path.removesuffix(".py").split("/"), *rest.split("::")])


def problems(case: Case) -> list[str]:
    """What is wrong with an entry's shape (empty when nothing)."""
    checks = {
        "commit is not 40 hex digits": SHA.fullmatch(case.commit),
        "date is not YYYY-MM-DD": DATE.fullmatch(case.date),
        "versions are not versions": VERSION.fullmatch(case.buggy) and VERSION.fullmatch(case.fixed),
        "buggy and fixed releases are the same": case.buggy != case.fixed,
        f"kind not in {KINDS}": case.kind in KINDS,
        f"python not in {PYTHONS}": case.python in PYTHONS,
        "repo is not owner/name": re.fullmatch(r"[\w.-]+/[\w.-]+", case.repo),
        "no test": case.tests and all(NODE.fullmatch(t) for t in case.tests),
        "no fix (fix or edits)": bool(case.fix) != bool(case.edits),
        "a fix entry is not path::name": all(DEF.fullmatch(f) for f in case.fix),
        "an assertion case names another exception": case.kind != "assertion" or case.exception in WRONG_VALUE,
        "a crash case names a wrong value": case.kind != "crash" or case.exception not in WRONG_VALUE,
        "an edit changes nothing": all(e.old != e.new and e.old for e in case.edits),
        f"runner not in {RUNNERS}": case.runner in RUNNERS,
    }
    return [what for what, ok in checks.items() if not ok]


def load(path: Path = MANIFEST) -> list[Case]:
    data = tomllib.loads(path.read_text())
    cases = []
    for entry in data["case"]:
        fields = dict(entry)
        fields["tests"] = tuple(fields.get("tests", ()))
        fields["fix"] = tuple(fields.get("fix", ()))
        fields["deps"] = tuple(fields.get("deps", ()))
        fields["files"] = tuple(fields.get("files", ()))
        fields["edits"] = tuple(Edit(**e) for e in fields.get("edits", ()))
        cases.append(Case(**fields))
    return cases
