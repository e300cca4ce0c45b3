"""Docstrings name modules that exist: a file path (`patcher/x/y.py`, `egress.py`), a dotted name
(`patcher.result.Reason`), a `module.Name`, or one of the flat module names the packages replaced."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = sorted(p for top in ("patcher", "sandbox") for p in (ROOT / top).rglob("*.py"))
MODULE_NAMES = {p.stem for p in OURS} | {p.parent.name for p in OURS if p.name == "__init__.py"}
FILE_NAMES = {p.name for top in ("patcher", "sandbox") for p in (ROOT / top).rglob("*") if p.is_file()}
NOT_OURS = {"setup.py", "conftest.py", "pytest.py", "unittest.py", "path.py", "a.py", "manage.py", "SCRIPT.py",
            "noxfile.py"}
"""Files of the repository under repair, or of the runner, that docstrings talk about."""
RETIRED = {"api_auth", "api_checks", "api_events", "api_service", "envcache", "envconfig", "envplan",
           "offline_base", "pipconf", "traceanalysis", "tracerender", "traceview"}
"""Flat modules the stage packages replaced (`git log --diff-filter=R`); plain words (and pydantic's
`model_config`) are left out."""
FILE_REF = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.py)\b")
DOTTED = re.compile(r"(?<![\w.])((?:patcher|sandbox)(?:\.\w+)+)")
MODULE_ATTR = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)\.([A-Z]\w*)\b")
HOSTS = (".com", ".org", ".net", ".example")
WORD = re.compile(r"\b[a-z][a-z0-9_]*\b")


def docstrings() -> list[tuple[str, str]]:
    out = []
    for path in OURS:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            if isinstance(node, kinds) and (doc := ast.get_docstring(node, clean=False)):
                out.append((f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", doc))
    return out


def file_exists(ref: str) -> bool:
    if "/" not in ref:  # test_*.py: a test file of the repository under repair
        return ref in FILE_NAMES or ref in NOT_OURS or ref.startswith("test_")
    top = ref.split("/", 1)[0]
    return top not in ("patcher", "sandbox", "bench", "scripts") or (ROOT / ref).is_file()


def dotted_exists(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def module_known(name: str) -> bool:
    if name in MODULE_NAMES or name in sys.stdlib_module_names:
        return True
    try:
        importlib.util.find_spec(name)  # an installed dependency (`docker.DockerClient`)
    except (ImportError, ValueError):
        return False
    return importlib.util.find_spec(name) is not None


def dangling(doc: str) -> list[str]:
    out = [ref for ref in FILE_REF.findall(doc) if not file_exists(ref)]
    out += [name for name in DOTTED.findall(doc) if not name.endswith(HOSTS) and not dotted_exists(name)]
    out += [f"{mod}.{attr}" for mod, attr in MODULE_ATTR.findall(doc)
            if (mod in RETIRED or "_" in mod) and not module_known(mod)]
    out += [word for word in WORD.findall(doc) if word in RETIRED]
    return out


def test_no_docstring_names_a_module_that_does_not_exist() -> None:
    found = [f"{where}: {ref}" for where, doc in docstrings() for ref in dangling(doc)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("doc", ["envplan.py: what to install", "see patcher/verify/verdict.py",
                                 "(api_auth.HostGuard)", "traceview reads, tracerender shows",
                                 "`patcher.result.Outcome`", "patcher.nowhere reads it"])
def test_a_name_that_went_away_is_found(doc: str) -> None:
    assert dangling(doc)


@pytest.mark.parametrize("doc", ["plan.py: what to install", "see patcher/verify/policy/rules.py", "(auth.HostGuard)",
                                 "`patcher.result.Reason`", "the repo's own setup.py", "docker.DockerClient"])
def test_a_name_that_exists_passes(doc: str) -> None:
    assert not dangling(doc)
