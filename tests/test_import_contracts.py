"""The import contracts count imports made only for the type checker: a cycle through `if TYPE_CHECKING:`
is still a cycle (pyproject.toml, [tool.importlinter]; scripts/test.sh runs `lint-imports` on patcher and sandbox);
what the box loads by path, which import-linter cannot see, imports only the standard library and its folder."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install -e '.[dev]')")
def test_a_cycle_made_only_for_the_type_checker_breaks_the_contract(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "loop.py").write_text("from pkg.telemetry import Telemetry\n")
    (pkg / "telemetry.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                      "    from pkg.loop import Result\n\n\nclass Telemetry:\n    pass\n")
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert ours["exclude_type_checking_imports"] is False
    (tmp_path / ".importlinter").write_text("[importlinter]\nroot_package = pkg\nexclude_type_checking_imports = False"
                                            "\n\n[importlinter:contract:cycles]\nname = no cycles\n"
                                            "type = acyclic_siblings\nancestors = pkg\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([str(LINT), "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1 and "BROKEN" in run.stdout, run.stdout + run.stderr


PATH_LOADED = ("sandbox/judge", "sandbox/harness")
"""Loaded by path in the box (the judge's siblings by file, the harness from PYTHONPATH), so import-linter never
sees them: they run under the repository's Python next to its code, with the standard library, the test
framework they serve and the modules of their own folder only."""
FRAMEWORK = {"pytest", "_pytest"}


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("folder", PATH_LOADED)
def test_what_is_loaded_by_path_imports_only_the_standard_library_and_its_folder(folder: str) -> None:
    files = sorted((ROOT / folder).rglob("*.py"))
    own = {f.stem for f in files}
    found = {f"{f.relative_to(ROOT)}: {name}" for f in files
             for name in _imported(f) - set(sys.stdlib_module_names) - FRAMEWORK - own}
    assert files
    assert not found, sorted(found)
