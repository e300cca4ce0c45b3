"""The values of the repository's module-level names a failing test imports (patcher_heldout.py, mode `values`):
each module imported as the test imports it (its package's `__init__` first), each name read off it, as plain
data (sandbox/plain.py). The host asks on the base and with the diff: a constant the test hands the function,
changed by the diff, shows here however the diff spelled the change (an assignment, `+=`, a write from the
package's `__init__`). Standard library only, Python 3.9 and later; loaded from its file, never put in
sys.modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def run(job: dict[str, Any], emit: Callable[[dict[str, Any]], None], names: Any, plain: Any) -> None:
    for module, name in job["names"]:
        try:
            value = getattr(importlib.import_module(module), name)
        except BaseException as e:  # the module does not import, or has no such name: nothing to compare
            emit({"k": "value", "module": module, "name": name, "why": names.type_name(type(e))})
            continue
        emit({"k": "value", "module": module, "name": name, "v": plain.encode(value)})
