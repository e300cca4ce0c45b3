"""The held-out judge's calls in a process like an application's (sandbox/heldout.py with `app`), on this machine
(no Docker): the process the tool server starts, read back through its signed records. Nothing a call can read
tells it from an application's script: no flags, no test-run variables, no trace or audit hook, no timer, argv
and `__main__` a script's (with a loader), the calling module in sys.modules, the side's own tree imported."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from sandbox import heldout
from sandbox.plain import decode, encode

PROBE = '''import faulthandler
import os
import signal
import sys


def tells(x):
    caller = sys._getframe(1).f_globals.get("__name__")
    main = sys.modules.get("__main__")
    return {
        "flags": [sys.flags.no_site, sys.flags.ignore_environment, sys.flags.no_user_site, sys.flags.isolated,
                  sys.flags.safe_path if hasattr(sys.flags, "safe_path") else 0, sys.flags.dont_write_bytecode],
        "env": sorted(os.environ),
        "trace": sys.gettrace() is not None,
        "timer": signal.getitimer(signal.ITIMER_REAL)[0] > 0,
        "alarm": signal.getsignal(signal.SIGALRM) == signal.SIG_DFL,
        "faulthandler": faulthandler.is_enabled(),
        "argv": sys.argv,
        "prefix": sys.argv[0].startswith(sys.prefix),
        "loader": getattr(main, "__loader__", None) is not None,
        "caller": caller in sys.modules,
        "frameworks": sorted(m for m in ("pytest", "_pytest", "pluggy", "unittest") if m in sys.modules),
        "cwd_is_tree": os.path.isfile(os.path.join(os.getcwd(), "probe_mod.py")),
        "x": x,
    }
'''


def test_a_call_made_as_an_application_makes_it_sees_nothing_of_the_judge(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)  # the box's `python`: this interpreter, no shim between
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "probe_mod.py").write_text(PROBE)
    job = {"mode": "call", "app": True, "target": {"module": "probe_mod", "qualname": "tells", "kind": "function"},
           "calls": [{"pos": [encode(7)], "kw": []}], "site": None, "lines": {}, "per_call_s": 2.0,
           "total_s": 10.0, "restore": {}}
    got = heldout.held_out(json.dumps(job), str(repo), "group", time.monotonic() + 60)
    records = got.data["evidence"]["records"]
    assert got.data["evidence"]["problem"] is None, got
    answer = next(r for r in records if r.get("k") == "call")["o"]
    seen = decode(answer["r"], _no_names)
    assert seen["flags"] == [0, 0, 0, 0, 0, 0] and seen["env"] == ["HOME", "LANG", "PATH"], seen
    assert not any(seen[k] for k in ("trace", "timer", "faulthandler", "prefix", "cwd_is_tree", "frameworks")), seen
    assert all(seen[k] for k in ("alarm", "loader", "caller")), seen
    assert seen["argv"] == ["/srv/app/main.py"] and seen["x"] == 7, seen


def _no_names(name: str) -> object:
    raise LookupError(name)
