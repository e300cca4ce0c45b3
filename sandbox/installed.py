"""What the test environment installed, for the `modules` request: the top-level import names of its
distributions, scanned on the site directories a test interpreter gets.

Apart from server.py because none of it is the server's own work (reading requests, signing results): the
server imports it on the first `modules` request only, since importlib.metadata pulls in zipfile, email,
csv... and a box starts faster without them. Standard library only, as all of sandbox/.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from sandbox.protocol import ToolResult


def modules() -> ToolResult:
    """The sorted import names of the installed distributions; the server's sys.path is as it was after."""
    import importlib.metadata

    own = list(sys.path)
    sys.path.extend(p for p in site_paths() if p not in own)  # read as data only, for the scan
    try:
        names = sorted(n for n in _top_level_names(importlib.metadata) if n.isidentifier())
    finally:
        sys.path[:] = own
    return ToolResult(is_error=False, output=f"{len(names)} top-level names", data={"modules": names})


def _top_level_names(metadata: Any) -> set[str]:
    """The import names of the installed distributions: packages_distributions() where it exists (3.10+),
    else what it reads, top_level.txt or the .py files a distribution records."""
    if hasattr(metadata, "packages_distributions"):
        return set(metadata.packages_distributions())
    names: set[str] = set()
    for dist in metadata.distributions():
        declared = (dist.read_text("top_level.txt") or "").split()
        names.update(declared or {f.parts[0] if len(f.parts) > 1 else f.stem for f in dist.files or ()
                                  if f.suffix == ".py"})
    return names


def site_paths() -> list[str]:
    """The site directories a test interpreter gets, found without running `site`: the server runs with -S
    (no .pth file's `import` line, which is code of whatever the environment installed, runs here) and -P
    (the repository is not on its path); path lines of .pth files are read as the data they are."""
    import site  # under -S this only defines the helpers; nothing is added to the path

    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    found = [d for d in dirs if os.path.isdir(d)]
    for top in list(found):
        for name in sorted(os.listdir(top)):
            if name.endswith(".pth"):
                found += pth_dirs(os.path.join(top, name), top)
    return list(dict.fromkeys(found))


def pth_dirs(pth: str, top: str) -> list[str]:
    """The existing directories a .pth file's path lines name (relative to `top`); its `import` lines are
    skipped, never run."""
    try:
        with open(pth, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f]
    except OSError:
        return []
    dirs = (os.path.normpath(os.path.join(top, line)) for line in lines
            if line and not line.startswith(("#", "import ", "import\t")))
    return [d for d in dirs if os.path.isdir(d)]
