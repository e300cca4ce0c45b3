"""The second judge's box side on this machine (no Docker): what the keeper accepts from its child, the values
judge's checks, and the judge's real processes against routes to forge a pass (tests/support/localjudge.py).

Forging routes, each tried by code under test in the child that runs it: the judge's own record writer
(reached through the gc and a dotted-name resolver), the key (searched for in memory and used to sign), raw
records written to every fd, the fds listed in /proc/self/fd, and signals to the judge's processes. None may
leave a pass the test did not make.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import localjudge as lj
from tests.support.boxfiles import box_module
from tests.support.helpers import make_repo

accept_mod, operands, strangers, values = (box_module(f"judge/{n}.py", f"_test_judge_{n}")
                                           for n in ("accept", "operands", "strangers", "values"))
JOB = {"cases": [{"id": "t0", "group": "g", "required": [5]}, {"id": "t1", "group": "g"}]}


def _accept(*lines: str) -> list[dict[str, Any]]:
    return accept_mod.accept([line.encode() for line in lines], JOB, {"status": 0, "signal": None},
                             lambda op, a, b: operands.OPS[op](a, b), operands.decode)


def _forged(records: list[dict[str, Any]]) -> str:
    return next((str(r["why"]) for r in records if r.get("k") == "forged"), "")


GOOD = ['{"k": "begin", "group": "g"}', '{"k": "start", "id": "t0"}',
        '{"k": "cmp", "id": "t0", "line": 5, "op": "==", "l": ["f", "0x1.4p+3"], "r": ["i", "10"], "ok": true}',
        '{"k": "test", "id": "t0", "outcome": "passed"}', '{"k": "done", "group": "g"}',
        '{"k": "exit", "group": "g", "status": 0}', '{"k": "fin"}']


def test_the_keeper_signs_a_well_formed_stream() -> None:
    got = _accept(*GOOD)
    assert [(r["k"], r.get("outcome")) for r in got] == [("begin", None), ("test", "passed")]
    assert got[1]["comparisons"] == 1 and got[1]["rechecked"] == 1


@pytest.mark.parametrize("lines,why", [
    ([*GOOD[:3], '{"k": "test", "id": "t0", "outcome": "passed"}', '{"k": "test", "id": "t0", "outcome": "passed"}'],
     "did not run"),
    ([*GOOD[:2], '{"k": "test", "id": "t0", "outcome": "passed"}'], "without its comparison on line 5"),
    ([*GOOD[:2], GOOD[2].replace('"r": ["i", "10"]', '"r": ["i", "11"]')], "does not give what"),
    ([*GOOD[:1], '{"k": "start", "id": "t9"}'], "outside its group"),
    ([*GOOD[:4], '{"k": "end", "exit": 0, "seq": 0}\tbeef', *GOOD[4:]], "did not write"),
    ([*GOOD[:4], '{"k": "report", "outcome": "passed"}'], "unknown kind"),
], ids=["two outcomes", "a pass without its assertion", "a comparison that does not hold", "another group's case",
        "a signed line written by the test", "a record of no kind the child writes"])
def test_the_keeper_calls_an_inconsistent_stream_forged(lines: list[str], why: str) -> None:
    assert why in _forged(_accept(*lines))


def test_a_group_that_ends_without_its_done_is_reported_with_the_case_it_ran() -> None:
    got = _accept(*GOOD[:2], '{"k": "exit", "group": "g", "status": 0}', '{"k": "fin"}')
    assert got[1:] == [{"k": "group", "group": "g", "case": "t0", "timed_out": False, "status": 0, "signal": None,
                        "oom": False}]
    dead = accept_mod.accept([line.encode() for line in GOOD[:2]], JOB, {"status": None, "signal": 9},
                             lambda op, a, b: operands.OPS[op](a, b), operands.decode)
    assert [r["k"] for r in dead] == ["begin", "group", "child"] and dead[2]["signal"] == 9


def test_the_child_reads_the_kernels_count_of_out_of_memory_kills(tmp_path: Path) -> None:
    child = box_module("judge/child.py", "_test_judge_child")
    v1, v2 = tmp_path / "oom_control", tmp_path / "memory.events"
    v1.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    counts = ((str(v2), "oom_kill"), (str(v1), "oom_kill"))  # the box's files, as cgroup v2 and v1 spell them
    assert child._oom_kills(counts) == 3, "cgroup v1, where v2's file is absent"
    v2.write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n")
    assert child._oom_kills(counts) == 2
    assert child._oom_kills(((str(tmp_path / "none"), "oom_kill"),)) == 0


def test_operands_round_trip_as_plain_data_only() -> None:
    for value in (None, True, 3, 10**40, -0.0, math.inf, "é", b"\x00", [1, (2, "x")], {"a": [1.5]}, {1, 2},
                  frozenset({"z"})):
        assert operands.decode(operands.encode(value)) == value or value != value
    assert operands.encode(object()) is None and operands.encode([1, object()]) is None
    assert operands.encode(type("F", (float,), {})(1.0)) is None  # a subclass is never taken for the builtin
    with pytest.raises(ValueError):
        operands.decode(["x", 1])


def test_the_rewritten_module_compares_as_written_and_keeps_its_lines() -> None:
    seen: list[tuple[str, int]] = []
    code = values.rewrite("x = 1\n\n\nassert (x + 1 == 2) and (3 in [3]) and not (x > 2)\ny = 1 < x < 3\n", "t.py")
    space = {"@patcher_compare": lambda op, line, a, b: seen.append((op, line)) or operands.OPS[op](a, b)}
    exec(code, space)
    assert seen == [("==", 4), ("in", 4), (">", 4)] and space["y"] is False  # a chained comparison is left alone


class Honest:
    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Honest) and self.v == other.v

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Honest):
            return NotImplemented
        return self.v < other.v

    __hash__ = None  # type: ignore[assignment]


class Loose(float):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = float.__hash__


class OnlyTen(float):
    def __eq__(self, other: object) -> bool:
        return other == 10.0 or float(self) == other

    __hash__ = float.__hash__


class Loosened:
    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Loosened)

    __hash__ = None  # type: ignore[assignment]


class Before:
    def __lt__(self, other: object) -> bool:
        return True


def _judged(op: str, left: Any, right: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    checker = values.Values(out.append, lambda code: True, None, str(Path(__file__).parent), operands, strangers)
    checker.compare(op, 7, left, right)
    return [r for r in out if r["k"] == "obs"]


def test_degenerate_values_are_found_and_honest_ones_pass() -> None:
    assert _judged("==", Loose(3.0), 10.0)[0]["what"].endswith("equals a fresh object of another type")
    assert "hashes differently" in _judged("==", OnlyTen(3.0), 10.0)[0]["what"]
    assert "orders against" in _judged("<", Before(), Before())[0]["what"]
    assert "with every field changed" in _judged("==", Loosened(0), Loosened(500))[0]["what"]
    assert not _judged("==", Honest(1), Honest(1)) and not _judged("<", Honest(1), Honest(2))
    assert not _judged("==", [Honest(1)], [Honest(1)]) and not _judged("==", 10.0, 10.0)
    assert _judged("==", [Loose(1.0)], [2.0]), "an element of a compared list is judged too"


def test_a_librarys_value_equal_to_anything_is_reported_and_its_other_oddities_are_not() -> None:
    from unittest import mock

    out: list[dict[str, Any]] = []
    checker = values.Values(out.append, lambda code: False, None, str(Path(__file__).parent), operands, strangers)
    checker.compare("==", 7, mock.ANY, 10.0)
    found = [r for r in out if r["k"] == "obs"]
    assert [(r["kind"], r["refuses"], r["type"]) for r in found] == [("overload", True, "unittest.mock._ANY")]
    out.clear()
    checker.compare("==", 8, mock.call(1), mock.call(1))
    assert [r for r in out if r["k"] == "obs"] == [], "a library's honest value"


RATES = 'RATES = {"EUR": 1.0}\n\n\ndef convert(amount, code):\n    return amount * RATES[code]\n'
TESTS = 'from rates import convert\n\n\ndef test_at_par():\n    assert convert(10, "CHF") == 10.0\n'
FORGERS = {
    "the judge's record writer": (
        "    import gc, pkgutil\n"
        "    for name in ('__main__:Channel', '_patcher_judge_keeper:Channel'):\n"
        "        try:\n            pkgutil.resolve_name(name)\n        except Exception:\n            pass\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, type) and o.__name__ == 'Channel':\n"
        "            for fd in range(3, 64):\n"
        "                try:\n"
        "                    o(fd, b'k' * 32).emit({'k': 'test', 'id': 'patched:t0', 'outcome': 'passed'})\n"
        "                except Exception:\n                    pass\n"),
    "the key in memory": (
        "    import gc, hmac, hashlib, json, os\n"
        "    keys = [o for o in gc.get_objects() if isinstance(o, bytes) and len(o) == 32]\n"
        "    for key in keys:\n"
        "        body = json.dumps({'k': 'test', 'id': 'patched:t0', 'outcome': 'passed', 'seq': 0}).encode()\n"
        "        line = body + b'\\t' + hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b'\\n'\n"
        "        for fd in range(3, 64):\n"
        "            try:\n                os.write(fd, line)\n            except OSError:\n                pass\n"),
    "raw records on every fd, then an exit": (
        "    import json, os\n"
        "    ten = ['f', (10.0).hex()]\n"
        "    forged = [{'k': 'cmp', 'id': 'patched:t0', 'line': 5, 'op': '==', 'l': ten, 'r': ten, 'ok': True},\n"
        "              {'k': 'test', 'id': 'patched:t0', 'outcome': 'passed'}, {'k': 'done', 'group': 'patched'}]\n"
        "    for fd in range(3, 64):\n"
        "        try:\n            os.write(fd, ''.join(json.dumps(r) + '\\n' for r in forged).encode())\n"
        "        except OSError:\n            pass\n"
        "    os._exit(0)\n"),
    "the fds listed in /proc/self/fd": (
        "    import os\n"
        "    for name in os.listdir('/proc/self/fd'):\n"
        "        if int(name) > 2:\n"
        "            try:\n                os.write(int(name), b'{\"k\": \"fin\"}\\n')\n"
        "            except OSError:\n                pass\n"),
    "signals to the judge's processes": (
        "    import os, signal\n"
        "    with open(f'/proc/{os.getppid()}/status') as f:\n"
        "        keeper = int([x for x in f if x.startswith('PPid:')][0].split()[1])\n"
        "    for pid in (keeper, os.getppid()):\n"
        "        for sig in (signal.SIGTERM, signal.SIGKILL):\n"
        "            try:\n                os.kill(pid, sig)\n            except OSError:\n                pass\n"),
}


@pytest.mark.parametrize("name", sorted(FORGERS))
def test_code_under_test_cannot_forge_a_pass(tmp_path: Path, name: str) -> None:
    cheat = RATES.replace("    return amount", FORGERS[name] + "    return amount")
    repo = make_repo(tmp_path / "repo", {"rates.py": cheat, "tests/test_rates.py": TESTS}, commit=False)
    added = {"rates.py": list(range(5, cheat.count("\n")))}
    got = lj.judge(repo, lj.both_trees("tests/test_rates.py::test_at_par", {"rates.py": RATES}, added,
                                       ["tests/test_rates.py"], [5]))
    assert lj.outcomes(got, "base:t0") == {"bare": "failed", "dressed": "failed"}, "the base's are signed first"
    forged = [c["problem"] or _forged(c["records"]) for c in got["contexts"].values()]
    seen = lj.observed(got)
    ended = [r for c in got["contexts"].values() for r in c["records"] if r.get("k") in ("group", "child")]
    caught = any(forged) or any(refuses for _, refuses in seen) or bool(ended)
    # No outcome in a context: the keeper was killed before it signed one, and its run has no end record, which
    # the host refuses (report_tampered, twice.py); under load that kill can land before the observer's record.
    if "passed" in lj.outcomes(got).values():  # signed in a context, but shown up where the diff is watched
        assert any(forged) or any(refuses for _, refuses in seen), (name, got)
    unsigned = [c for c, outcome in lj.outcomes(got).items() if outcome is None]
    assert caught or not any(got["contexts"][c]["ended"] for c in unsigned), (name, got)
    assert caught or set(lj.outcomes(got).values()) <= {"failed", None}, (name, got)


def test_the_dressed_run_looks_like_pytest_and_the_bare_one_like_an_application(tmp_path: Path) -> None:
    probe = ("    import faulthandler, os, sys\n"
             "    print(repr((sys.argv[0], 'pytest' in sys.modules, os.environ.get('PYTEST_CURRENT_TEST'), "
             "faulthandler.is_enabled(), type(sys.stdout).__name__, sys.flags.safe_path, "
             "os.path.isdir('tests'), getattr(sys.modules['__main__'], '__file__', ''), "
             "(sys.flags.no_site, sys.flags.ignore_environment, sys.flags.no_user_site, sys.flags.isolated), "
             "getattr(sys.modules['__main__'], '__loader__', None) is None)), file=sys.__stderr__)\n")
    cheat = RATES.replace("    return amount", probe + "    return amount")
    repo = make_repo(tmp_path / "repo", {"rates.py": cheat, "tests/test_rates.py": TESTS}, commit=False)
    got = lj.judge(repo, lj.both_trees("tests/test_rates.py::test_at_par", {"rates.py": cheat}, {}, [], []))
    lines = [line for line in got["output"].splitlines() if line.startswith(("[", "(")) and "'" in line]
    bare = next(line for line in lines if "/srv/app/main.py" in line)
    dressed = next(line for line in lines if "pytest/__main__.py" in line)
    assert "False, None, False, 'TextIOWrapper', False, False, '/srv/app/main.py', (0, 0, 0, 0), False" in bare, bare
    assert "True, 'tests/test_rates.py::test_at_par (call)', True, 'CaptureIO', True, True" in dressed, dressed
    assert "patcher_judge" not in got["output"]


def test_a_process_the_test_forks_has_no_say_in_the_record(tmp_path: Path) -> None:
    """A forked child runs the judge's hooks too (comparisons, observers); what it does is not the run's."""
    test = ("import os\n\nfrom rates import convert\n\n\ndef test_at_par():\n    pid = os.fork()\n    if pid == 0:\n"
            "        assert convert(1, 'EUR') == 1.0\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
            "    assert convert(10, 'CHF') == 10.0\n")
    fixed = RATES.replace("RATES[code]", "RATES.get(code, 1.0)")
    repo = make_repo(tmp_path / "repo", {"rates.py": fixed, "tests/test_rates.py": test}, commit=False)
    got = lj.judge(repo, lj.both_trees("tests/test_rates.py::test_at_par", {"rates.py": RATES}, {"rates.py": [5]},
                                       ["tests/test_rates.py"], [12]))
    assert lj.outcomes(got) == {"bare": "passed", "dressed": "passed"}, got
    assert not any(c["problem"] or _forged(c["records"]) for c in got["contexts"].values()), got
    assert not any(refuses for _, refuses in lj.observed(got)), got


def test_warnings_a_test_expects_are_caught_outside_pytest(tmp_path: Path) -> None:
    """pytest.warns and pytest.deprecated_call of the stand-in see a warning the code gives (semver's deprecated
    decorator, through warnings.warn_explicit), and fail where none is given."""
    lib = ("import warnings\n\n\ndef old():\n    warnings.warn_explicit('old', DeprecationWarning, 'lib.py', 5)\n"
           "    return 1\n\n\ndef quiet():\n    return 1\n")
    tests = ("import pytest\n\nfrom lib import old, quiet\n\n\ndef test_warns():\n"
             "    with pytest.deprecated_call():\n        assert old() == 1\n\n\n"
             "def test_silent():\n    with pytest.warns(UserWarning):\n        quiet()\n")
    repo = make_repo(tmp_path / "repo", {"lib.py": lib, "tests/test_lib.py": tests}, commit=False)
    for name, want in (("test_warns", "passed"), ("test_silent", "failed")):
        got = lj.judge(repo, lj.both_trees(f"tests/test_lib.py::{name}", {"lib.py": lib}, {}, [], []))
        assert set(lj.outcomes(got, "base:t0").values()) == {want}, (name, got["output"][-2000:])


def test_a_parametrize_case_is_found_by_the_id_pytest_gives_it(tmp_path: Path) -> None:
    """Texts with newlines or non-ASCII, bytes, patterns, Enum members and named objects spelled as pytest spells
    them in an id (tomlkit's `[kwargs0-\\n]`), found by the judge under that id."""
    tests = ("import enum\nimport re\n\nimport pytest\n\n\nclass C(enum.Enum):\n    A = 1\n\n\n"
             "@pytest.mark.parametrize('v', ['\\n', 'a\\\\b', '\\u00e9', b'\\xc3', re.compile('a\\nb'), C.A, len,\n"
             "                              3.5])\ndef test_x(v):\n    pass\n\n\n"
             "@pytest.mark.parametrize('v', [1], ids=['a\\nb'])\ndef test_y(v):\n    pass\n")
    (tmp_path / "test_ids.py").write_text(tests)
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "test_ids.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    ids = [line for line in run.stdout.splitlines() if line.startswith("test_ids.py::")]
    assert len(ids) == 9, run.stdout
    cases = box_module("judge/cases.py", "_test_judge_cases")
    spec = importlib.util.spec_from_file_location("_test_judge_ids", tmp_path / "test_ids.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for node in ids:
        name, _, param = node.split("::")[1].partition("[")
        assert cases.parametrized(getattr(module, name), param[:-1]) is not None, node


def test_the_repositorys_own_test_package_wins_over_the_standard_librarys(tmp_path: Path) -> None:
    """mako's tests import helpers from their own `test` package (`from test import assert_raises`); the judge
    puts the test's root first, as pytest does, even where the root is on sys.path already (roots.py puts it
    last, after the installed packages and the standard library)."""
    files = {"lib.py": "def one():\n    return 1\n", "test/__init__.py": "def helper():\n    return 1\n",
             "test/test_lib.py": "from lib import one\nfrom test import helper\n\n\ndef test_one():\n"
                                 "    assert one() == helper()\n"}
    repo = make_repo(tmp_path / "repo", files, commit=False)
    got = lj.judge(repo, lj.both_trees("test/test_lib.py::test_one", {"lib.py": files["lib.py"]}, {}, [], []))
    assert set(lj.outcomes(got, "base:t0").values()) == {"passed"}, got["output"][-2000:]


def test_a_job_names_the_trees_it_runs_and_each_side_may_run_in_a_request_of_its_own(tmp_path: Path) -> None:
    """The host asks the base's half while pytest verifies and the diff's half after it (judges/asked.py): a job
    with `trees` copies and runs those only, and the base is the restored tree in either spelling."""
    repo = make_repo(tmp_path / "repo", {"rates.py": RATES.replace("RATES[code]", "RATES.get(code, 1.0)"),
                                         "tests/test_rates.py": TESTS}, commit=False)
    both = lj.both_trees("tests/test_rates.py::test_at_par", {"rates.py": RATES}, {}, [], [])
    for tree, serial in (("base", True), ("patched", False)):  # serial: one context after the other
        got = lj.judge(repo, {**both, "patched": None, "trees": [tree], "serial": serial,
                              "cases": [c for c in both["cases"] if c["tree"] == tree]})
        other = "patched" if tree == "base" else "base"
        assert lj.outcomes(got, f"{tree}:t0") == {"bare": "failed" if tree == "base" else "passed",
                                                  "dressed": "failed" if tree == "base" else "passed"}, got
        assert lj.outcomes(got, f"{other}:t0") == {"bare": None, "dressed": None}
        assert all(c["ended"] and not c["problem"] for c in got["contexts"].values()), got
    bad = lj.judge(repo, {**both, "trees": ["elsewhere"]})
    assert "no such tree" in bad["output"]
