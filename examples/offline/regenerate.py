"""Rewrite each example's traceback.txt from a real pytest run: `python examples/offline/regenerate.py`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_tests(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"]
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=120)


def main() -> None:
    for project in sorted(p for p in HERE.iterdir() if (p / "tests").is_dir()):
        run = run_tests(project)
        if run.returncode != 1:
            sys.exit(f"{project.name}: expected failing tests, pytest exited {run.returncode}\n{run.stdout}")
        (project / "traceback.txt").write_text(run.stdout)
        print(f"{project.name}: {run.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
