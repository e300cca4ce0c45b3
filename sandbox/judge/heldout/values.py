"""The values of the repository's module-level names a failing test imports (patcher_heldout.py, mode `values`):
each module imported as the test imports it (its package's `__init__` first), each name read off it, and each
value the test reads below one by constant subscripts and attributes, as plain data (sandbox/plain.py). The host
asks on the base and with the diff: a constant the test hands the function, changed by the diff, shows here
however the diff spelled the change (an assignment, `+=`, a write from the package's `__init__`, a mapping put in
its place). Standard library only, Python 3.9 and later; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def run(job: dict[str, Any], emit: Callable[[dict[str, Any]], None], names: Any, plain: Any) -> None:
    for read in job["names"]:
        module, name = read[0], read[1]
        steps = list(read[2]) if len(read) > 2 else []
        said = {"k": "value", "module": module, "name": name, **({"steps": steps} if steps else {})}
        try:
            value = getattr(importlib.import_module(module), name)
            for kind, key in steps:  # a value the test reads below the name: `BASKET["coupon"]`, `USER.email`
                value = value[key] if kind == "i" else getattr(value, str(key))
        except BaseException as e:  # the module does not import, or no such name or entry: nothing to compare
            emit({**said, "why": names.type_name(type(e))})
            continue
        emit({**said, "v": plain.encode(value)})
