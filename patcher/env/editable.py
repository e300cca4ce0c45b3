"""The project installed editable is found ahead of the image's own packages, as it is in a venv of its own.

The environment is a venv with the image's site-packages (its pytest and pytest's dependencies: Debian's
more_itertools, packaging, pluggy, attr, iniconfig, py). setuptools installs a flat-layout project editable
(PEP 660, any pip since 21.3) as an import finder appended to the end of `sys.meta_path`: a package of the same
name in the image's site-packages is found first, so more-itertools 8.x's tests imported Debian's
more_itertools 4 (`module 'more_itertools' has no attribute 'last'`, and a suite that ran out of memory) where
`setup.py develop` put the repository on the path. After the install, the setup container reads the mapping of
each setuptools editable finder and writes the directories that hold the mapped packages, when a name is found
there as itself and the directory is in the repository, to a `.pth` file of the environment: setuptools' own
"compat" editable mode, ahead of the image's site-packages and behind what the environment installed.
"""

from __future__ import annotations

SCRIPT_NAME = "editable.py"
PTH = "_patcher_editable.pth"

SCRIPT = f"""\
import glob, os, sysconfig

purelib = sysconfig.get_paths()["purelib"]
roots = []
for finder in sorted(glob.glob(os.path.join(purelib, "__editable___*_finder.py"))):
    namespace = {{"__name__": "_patcher_editable_mapping"}}
    try:
        with open(finder) as f:
            exec(compile(f.read(), finder, "exec"), namespace)
    except Exception:
        continue
    for name, path in sorted((namespace.get("MAPPING") or {{}}).items()):
        root = os.path.dirname(os.path.normpath(path))
        inside = root == "/workspace/repo" or root.startswith("/workspace/repo/")
        if os.path.basename(os.path.normpath(path)) == name and inside and root not in roots:
            roots.append(root)
if roots:
    with open(os.path.join(purelib, "{PTH}"), "w") as f:
        f.write("".join(root + "\\n" for root in roots))
    print("patcher: the editable project's directories on the path: " + ", ".join(roots))
"""
"""Runs in the setup container with the environment's Python, after the install."""
