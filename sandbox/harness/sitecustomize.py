"""Imported at start-up by every Python the tool server runs (this directory is its PYTHONPATH).

Tests run in safe-path mode (PYTHONSAFEPATH=1), so the repository is not put ahead of site-packages and a
repo `pytest.py` or `unittest.py` cannot stand in for the runner. Flat and src layouts still import
from the repository: its root (and `src/`) go at the *end* of sys.path, after the installed packages.
"""

import os
import sys


def _append_repo() -> None:
    root = os.environ.get("PATCHER_REPO_ROOT")
    if not root:
        return
    for path in (root, os.path.join(root, "src")):
        if os.path.isdir(path) and path not in sys.path:
            sys.path.append(path)


_append_repo()
