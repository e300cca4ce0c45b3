"""The import contracts count imports made only for the type checker: a cycle through `if TYPE_CHECKING:`
is still a cycle (pyproject.toml, [tool.importlinter]; scripts/test.sh runs `lint-imports` on patcher)."""

from __future__ import annotations

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
