"""The box side's modules (sandbox/judge/, sandbox/plain.py) loaded from their files, as the box loads them: the
folder is no package, and they are kept out of sys.modules."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SANDBOX = Path(__file__).resolve().parents[2] / "sandbox"


def box_module(rel: str, name: str) -> ModuleType:
    """`sandbox/<rel>` loaded as a module named `name`."""
    spec = importlib.util.spec_from_file_location(name, SANDBOX / rel)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
