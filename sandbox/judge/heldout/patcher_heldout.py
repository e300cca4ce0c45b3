"""The held-out judge's box side: `python patcher_heldout.py JOBFILE`, started by the tool server
(sandbox/heldout.py) in a fresh copy of the tree.

Mode `record` (record.py): the fail-to-pass tests under pytest on the base, noting the crash's own argument
values. Mode `call` (calls.py): one repository function called with each input, on the base or the patched
tree, one process for all the calls of a side (with `app`, a process like an application's: no trace
hook, no timer, no flags). Mode `values` (values.py): module-level names a test
imports. Records leave on the harness's signed channel (harness/patcher_channel.py, keyed through a pipe named
in PATCHER_EVIDENCE), loaded here before any repository code is imported, as its writer's functions are bound
then. Standard library only (pytest for `record`), Python 3.9 and later; the sibling modules are run from their
files and kept out of sys.modules.
"""

import importlib.util
import json
import os
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APP = "/srv/app/main.py"


def _as_application(calls: Any) -> None:
    """The calls made as an application's script makes them: argv and `__main__` name a script outside the
    interpreter's prefix (with a loader, as `python script` has it), the calling module is that `__main__`, and
    this folder is off sys.path."""
    from importlib.machinery import SourceFileLoader

    sys.argv = [APP]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = ["python", APP]
    calls.__dict__.update({"__name__": "__main__", "__file__": APP, "__loader__": SourceFileLoader("__main__", APP),
                           "__spec__": None})
    sys.modules["__main__"] = calls
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != _HERE]


def main() -> int:
    top = os.path.dirname(os.path.dirname(_HERE))  # sandbox/
    channel = _load(os.path.join(top, "harness", "patcher_channel.py"), "_patcher_heldout_channel").channel
    plain = _load(os.path.join(top, "plain.py"), "_patcher_heldout_plain")
    names = _load(os.path.join(_HERE, "names.py"), "_patcher_heldout_names")
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    os.unlink(sys.argv[1])
    sys.argv = [""]
    files = {"record": "record.py", "values": "values.py"}
    mode = _load(os.path.join(_HERE, files.get(job["mode"], "calls.py")), "_patcher_heldout_" + str(job["mode"]))
    if job.get("app"):
        _as_application(mode)
    roots = _load(os.path.join(_HERE, "..", "roots.py"), "_patcher_heldout_roots")
    workspace = str(job.get("workspace") or "")
    roots.take(job["root"], workspace)
    try:
        mode.run(job, channel.emit, names, plain)
        escaped = roots.escaped(workspace)
        if escaped:
            channel.emit({"k": "escaped", "modules": escaped[:20]})
    finally:
        channel.emit({"k": "end"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
