"""The held-out inputs asked inside the test's own run (sandbox/judge/heldout/inrun.py), on this machine (no Docker):
a real pytest run under the harness, with the job sent after the run's key as the tool server sends it, and the
signed records read back as the server reads them."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

from sandbox.evidence import HARNESS_DIR, PLUGIN, EvidenceChannel
from sandbox.plain import encode

RATES = '''RATES = {"USD": 1.0, "EUR": 0.5}


class Book:
    def __init__(self, owner):
        self.owner = owner
        self.hook = lambda x: x

    def convert(self, amount, code):
        return amount * RATES[code]


def convert(amount, code):
    if code == "GBP":
        return 0.0
    return amount * RATES[code]
'''
TESTS = '''import rates


def test_unknown():
    assert rates.convert(10, "GBP") == 0.0
    assert rates.convert(4, "EUR") == 2.0


def test_book():
    b = rates.Book("me")
    assert b.convert(10, "EUR") == 5.0
'''


def _run(repo: Path, node: str, job: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """pytest on `node` under the harness with the held-out job: its outcome line and the signed records."""
    channel = EvidenceChannel(json.dumps({**job, "site": job.get("site")}))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": HARNESS_DIR, "PYTHONSAFEPATH": "1",
           "PATCHER_EVIDENCE": channel.env_value, "PATCHER_REPO_ROOT": str(repo), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_ADDOPTS": f"-p {PLUGIN} -p no:cacheprovider"}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", node], cwd=repo, env=env,
                            pass_fds=channel.child_fds, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    channel.started()
    try:
        while select.select([channel.read_fd], [], [], 60)[0]:
            chunk = os.read(channel.read_fd, 65536)
            if not chunk:
                break
            channel.add(chunk)
        out = proc.communicate(timeout=60)[0].decode()
        got = channel.result()
    finally:
        channel.close()
    assert got["problem"] is None, got
    return out.strip().splitlines()[-1], got["records"]


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "rates.py").write_text(RATES)
    (tmp_path / "tests" / "test_rates.py").write_text(TESTS)
    return tmp_path


def _call(*args: Any) -> dict[str, Any]:
    return {"pos": [encode(a) for a in args], "kw": []}


def _answers(records: list[dict[str, Any]]) -> list[Any]:
    calls = sorted((r for r in records if r.get("k") == "call"), key=lambda r: r["i"])
    return [r["o"].get("r") or r["o"].get("x") for r in calls]


def test_each_input_is_answered_at_the_tested_call_and_the_test_goes_on_untouched(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    job = {"target": {"file": "rates.py", "first": 13, "func": "convert"}, "call": _call(4, "EUR"),
           "inputs": [{"live": True}, _call(4, "EUR"), _call(7, "USD"), _call(7, "XYZ"), _call(1, "GBP")],
           "site": ["rates.py", "convert"], "lines": {"rates.py": [14, 15]}}
    last, records = _run(repo, "tests/test_rates.py::test_unknown", job)
    assert last.startswith("1 passed"), last
    assert [r["call"] for r in records if r.get("k") == "inrun"] == [_call(4, "EUR")], "met by its arguments"
    assert _answers(records) == [["f", "2.0"], ["f", "2.0"], ["f", "7.0"], "KeyError", ["f", "0.0"]]
    calls = {r["i"]: r for r in records if r.get("k") == "call"}
    assert calls[3]["o"]["site"] is True and calls[3]["o"]["args"] == "('XYZ',)"
    assert any(p[1] == 15 for p in calls[4]["p"]) and not any(p[1] == 15 for p in calls[2]["p"]), "paths"


def test_what_is_not_plain_data_stays_the_test_s_own_object_and_an_instance_is_varied_on_a_copy(
        tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    book = ["o", "rates:Book", [["owner", ["s", "me"]], ["hook", ["?", "builtins.function", "<lambda>"]]]]
    other = ["o", "rates:Book", [["owner", ["s", "you"]], ["hook", ["?", "builtins.function", "<lambda>"]]]]
    job = {"target": {"file": "rates.py", "first": 9, "func": "convert"},
           "call": {"pos": [book, ["i", "10"], ["s", "EUR"]], "kw": []},
           "inputs": [{"live": True}, {"pos": [["?", "rates.Book", "b"], ["i", "3"], ["s", "USD"]], "kw": []},
                      {"pos": [other, ["i", "3"], ["s", "EUR"]], "kw": []},
                      {"pos": [["?", "rates.Book", "b"], ["i", "3"], ["s", "ZZZ"]], "kw": []}]}
    last, records = _run(repo, "tests/test_rates.py::test_book", job)
    assert last.startswith("1 passed"), last
    assert _answers(records) == [["f", "5.0"], ["f", "3.0"], ["f", "1.5"], "KeyError"]


def test_a_call_never_met_with_the_recorded_arguments_asks_nothing_and_says_what_it_met(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    job = {"target": {"file": "rates.py", "first": 13, "func": "convert"}, "call": _call(99, "EUR"),
           "inputs": [{"live": True}]}
    last, records = _run(repo, "tests/test_rates.py::test_unknown", job)
    assert last.startswith("1 passed"), last
    assert not [r for r in records if r.get("k") in ("inrun", "call")]
    assert [r["call"] for r in records if r.get("k") == "inrun_other"] == [_call(10, "GBP")]


def test_the_judge_s_own_fault_never_reaches_the_test(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    job = {"target": {"file": "rates.py", "first": 13, "func": "convert"}, "inputs": []}  # no "call": a fault
    last, records = _run(repo, "tests/test_rates.py::test_unknown", job)
    assert last.startswith("1 passed"), last
    assert next(r for r in records if r.get("k") == "inrun")["ok"] is False


GENERATOR = '''def pairs(items):
    for i in range(len(items)):
        yield items[i], items[i + 1]
'''
GEN_TEST = '''from gen import pairs


def test_pairs():
    assert list(pairs([1, 2, 3])) == [(1, 2), (2, 3)]
'''


def test_a_generator_is_answered_with_its_items_as_the_test_s_own_code_draws_them(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "gen.py").write_text(GENERATOR)
    (tmp_path / "tests" / "test_gen.py").write_text(GEN_TEST)
    job = {"target": {"file": "gen.py", "first": 1, "func": "pairs"}, "call": _call([1, 2, 3]),
           "inputs": [{"live": True}, _call([5, 6]), _call([])], "site": ["gen.py", "pairs"]}
    last, records = _run(tmp_path, "tests/test_gen.py::test_pairs", job)
    assert last.startswith("1 failed"), last  # the base's bug: one past the end
    calls = {r["i"]: r["o"] for r in records if r.get("k") == "call"}
    assert calls[0]["x"] == "IndexError" and calls[0]["site"] is True
    assert calls[1]["x"] == "IndexError"
    assert calls[2] == {"r": ["l", []], "gen": True}


def test_a_tracer_started_with_the_session_does_not_hide_the_tested_call(tmp_path: Path) -> None:
    """pytest-cov starts coverage's tracer as the session starts, in place of the one the harness set at import."""
    repo = _repo(tmp_path)
    (repo / "conftest.py").write_text("import sys\nimport threading\n\n\ndef pytest_sessionstart(session):\n"
                                      "    def tracer(frame, event, arg):\n        return None\n"
                                      "    sys.settrace(tracer)\n    threading.settrace(tracer)\n")
    job = {"target": {"file": "rates.py", "first": 13, "func": "convert"}, "call": _call(4, "EUR"),
           "inputs": [{"live": True}, _call(7, "USD")]}
    last, records = _run(repo, "tests/test_rates.py::test_unknown", job)
    assert last.startswith("1 passed"), last
    assert _answers(records) == [["f", "2.0"], ["f", "7.0"]]


def test_a_call_made_while_the_test_module_is_imported_is_never_taken_for_the_tested_one(tmp_path: Path) -> None:
    """boltons' test module calls one of its tests at import: the target's call there is the same function, with an
    argument alike by type (an opaque list), and returns where the test's own call crashes."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "barrel.py").write_text("def head(lists):\n    return lists[0][0]\n")
    (tmp_path / "tests" / "test_barrel.py").write_text(
        "from barrel import head\n\n\ndef test_empty():\n    assert head([[]] * 200) is None\n\n\n"
        "assert head([[7]] * 200) == 7\n")
    big = encode([[]] * 200)
    job = {"target": {"file": "barrel.py", "first": 1, "func": "head"}, "call": {"pos": [big], "kw": []}, "n": 0,
           "inputs": [{"live": True}, {"pos": [big], "kw": []}], "site": ["barrel.py", "head"]}
    last, records = _run(tmp_path, "tests/test_barrel.py::test_empty", job)
    assert last.startswith("1 failed"), last
    assert [r["call"]["pos"][0][2][:6] for r in records if r.get("k") == "inrun"] == ["[[], ["]
    assert [r["o"].get("x") for r in records if r.get("k") == "call"] == ["IndexError", "IndexError"]
