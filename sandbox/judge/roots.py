"""Each side's process imports its own tree, whatever the environment's install points at.

The judges copy the tree to paths chosen at random, one copy a side (the base, the diff). An environment that
installed the project (editable: a `.pth` line, an `.egg-link`, setuptools' import finder mapping names to
directories) points at the box's own copy, `/workspace/repo`, which in the judges' box is the patched tree:
left alone, the base side would import the diff's code. `take` moves every such pointer to the side's copy
(the same place inside it), then puts the copy's root and `src/` after the installed packages, as the harness's
sitecustomize does for pytest. `escaped` names the modules loaded from the box's copy all the same: a side that
ran the other side's code was not judged. Standard library only; Python 3.9 to 3.13; loaded from its file.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def take(root: str, workspace: str) -> None:
    """Every import path into `workspace` (the box's copy) leads into `root` instead; root and root/src last."""
    root = root.rstrip("/")
    if workspace:
        sys.path[:] = [moved(p, root, workspace) for p in sys.path]
        for finder in list(sys.meta_path):
            _move_finder(finder, root, workspace)
    for path in (root, os.path.join(root, "src")):
        if os.path.isdir(path) and path not in sys.path:
            sys.path.append(path)
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def moved(path: Any, root: str, workspace: str) -> Any:
    """`path` inside `workspace` as the same place inside `root`; any other path (or value) as it is."""
    if not isinstance(path, str) or not workspace:
        return path
    home = workspace.rstrip("/")
    if path == home:
        return root
    if path.startswith(home + "/"):
        return root + path[len(home):]
    return path


def _move_finder(finder: Any, root: str, workspace: str) -> None:
    """An editable install's import finder, pointed at `root`: setuptools' (`MAPPING`, `NAMESPACES` in the
    finder's module) and the `editables` redirector's (`_redirections`)."""
    module = sys.modules.get(str(getattr(finder, "__module__", "") or ""))
    space = vars(module) if module is not None else {}
    mapping, namespaces = space.get("MAPPING"), space.get("NAMESPACES")
    if isinstance(mapping, dict):
        for name, path in list(mapping.items()):
            mapping[name] = moved(path, root, workspace)
    if isinstance(namespaces, dict):
        for name, paths in list(namespaces.items()):
            if isinstance(paths, list):
                namespaces[name] = [moved(p, root, workspace) for p in paths]
    redirections = getattr(finder, "_redirections", None)
    if isinstance(redirections, dict):
        for name, path in list(redirections.items()):
            redirections[name] = moved(path, root, workspace)


def escaped(workspace: str) -> list[str]:
    """The loaded modules whose file is in `workspace` (the box's copy, not this side's tree)."""
    if not workspace:
        return []
    home = workspace.rstrip("/") + "/"
    out = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and os.path.abspath(where).startswith(home):
            out.append(name)
    return sorted(out)
