"""Perturbed reproductions (verify/perturb.py) and the second judge's runner (sandbox/judge/) run locally."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from patcher.verify.judges.variants import Variant, added_literals, special_cased, variants
from patcher.verify.policy.treediff import Change
from sandbox.evidence import EvidenceChannel
from sandbox.judging import JUDGE

TEST = ('import pytest\n\nimport calc\n\n\ndef test_it():\n    """Docs."""\n'
        '    assert calc.f("abc", 3, [1, 2]) == 7\n    with pytest.raises(KeyError, match="no"):\n'
        '        calc.f("zz")\n')


def test_variants_change_inputs_not_expected_values_or_matchers(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_c.py").write_text(TEST)
    got = variants(tmp_path, ["tests/test_c.py::test_it"])
    quotes = [v.quote for v in got]
    assert "tests/test_c.py:8: 'abc' -> 'abcx'" in quotes[0].replace('"', "'")
    assert any("3 -> 4" in q for q in quotes) and any("[1, 2] -> [2]" in q for q in quotes)
    assert not any("7 ->" in q or "'no'" in q or "Docs" in q for q in quotes)
    assert all(v.source.count("\n") == TEST.count("\n") for v in got)  # line numbers kept


def test_a_variant_is_special_cased_only_by_a_literal_the_diff_adds() -> None:
    v = Variant("t", "", "q", ("GBP",))
    assert special_cased(v, ["GBP"]) and special_cased(v, ["GB"]) and special_cased(v, ["P"])
    assert not special_cased(v, ["EUR", 0.0]) and not special_cased(Variant("t", "", "q", (10,)), [10.5])


CONVERT = 'RATES = {"EUR": 1.1}\n\n\ndef convert(code, amount):\n    return RATES[code] * amount\n'


def _special_cases(tmp_path: Path, guard: str) -> bool:
    """Whether the diff that puts `guard` before the crashing lookup special-cases the tested "gbp"."""
    (tmp_path / "conv.py").write_text(CONVERT)
    new = CONVERT.replace("    return RATES", f"    {guard}\n        return 1.3 * amount\n    return RATES")
    change = Change("conv.py", "modified", added_lines=[(5, f"    {guard}"), (6, "        return 1.3 * amount")],
                    new_text=new)
    return special_cased(Variant("t", "", "q", ("gbpx",)), added_literals([change], tmp_path))


def test_a_literal_spelled_as_a_computation_is_still_the_literal(tmp_path: Path) -> None:
    for guard in ('if code == "".join(["g", "b", "p"]):', "if code == bytes([103, 98, 112]).decode():",
                  'if code == chr(103) + "bp":', 'if code == "pbg"[::-1]:', 'if code.upper() == "GBP":',
                  'if code in (f"{chr(103)}bp", "zz"):', 'if code.encode() == b"g" + b"bp":',
                  'if code == "%c%c%c" % (103, 98, 112):', 'if code.casefold() == "GBP".swapcase():'):
        assert _special_cases(tmp_path, guard), guard


def test_folding_refuses_huge_or_named_values(tmp_path: Path) -> None:
    for guard in ('if code == "z" * 999_999_999:', "if code == str(RATES):", "if code == code.lower():",
                  'if code == "{:>999999999}".format(1):'):
        assert not _special_cases(tmp_path, guard), guard


def _judge(root: Path, cases: list[dict[str, str | None]]) -> list[dict[str, object]]:
    ev = EvidenceChannel()
    job = root.parent / "job.json"
    job.write_text(json.dumps({"record_fd": ev.child_fds[1], "root": str(root), "tmp": str(root.parent),
                               "cases": cases}))
    cwd = root.parent / "cwd"
    cwd.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-I", JUDGE, str(job)], cwd=cwd, stdin=ev.child_fds[0],
                            pass_fds=(ev.child_fds[1],), env={"PATH": os.environ.get("PATH", "")},
                            stdout=subprocess.DEVNULL)
    ev.started()
    while chunk := os.read(ev.read_fd, 65536):
        ev.add(chunk)
    proc.wait()
    result = ev.result()
    ev.close()
    assert result["problem"] is None
    return [r for r in result["records"] if r["k"] == "test"]


def test_the_judge_runs_plain_parametrized_fixture_and_unittest_tests_without_pytest(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("import sys\n\n\ndef div(a, b):\n    assert 'pytest' not in sys.modules\n"
                                  "    return a / b\n")
    (root / "tests/test_c.py").write_text(
        "import unittest\n\nimport pytest\n\nimport calc\n\n\n@pytest.fixture\ndef two():\n    yield 2\n\n\n"
        "def test_fx(tmp_path, monkeypatch, capsys, two):\n    print('hi')\n"
        "    assert capsys.readouterr().out == 'hi\\n'\n    monkeypatch.setenv('X', '1')\n"
        "    assert calc.div(4, two) == pytest.approx(2.0)\n\n\n"
        "@pytest.mark.parametrize('a,b', [(1, 0), (4, 2)])\ndef test_p(a, b):\n    assert calc.div(a, b) == a / b\n\n\n"
        "def test_conf(dbx):\n    pass\n\n\nclass T(unittest.TestCase):\n    def setUp(self):\n        self.x = 0\n\n"
        "    def test_z(self):\n        calc.div(1, self.x)\n")
    got = _judge(root, [{"id": i, "test": f"tests/test_c.py::{n}"} for i, n in
                        [("a", "test_fx"), ("b", "test_p[1-0]"), ("c", "test_p[4-2]"), ("d", "test_conf"),
                         ("e", "T::test_z")]])
    outcome = {r["id"]: r["outcome"] for r in got}
    assert outcome == {"a": "passed", "b": "failed", "c": "passed", "d": "unjudged", "e": "failed"}
    assert got[1]["exc"] == "ZeroDivisionError" and ["calc.py", "div"] in got[1]["frames"]  # type: ignore[operator]


def test_an_entry_added_to_a_table_is_data_not_a_special_case_of_the_code(tmp_path: Path) -> None:
    """`RATES = {..., "GBP": 0.85}` adds the tested key as data (the GBPx variant rightly still crashes); the same
    literal in the code (`if code == "GBP"`, `code in ("GBP",)`) is what special-cases the tested input."""
    base = 'RATES = {"USD": 1.0}\n\n\ndef convert(amount, code):\n    return amount * RATES[code]\n'
    (tmp_path / "conv.py").write_text(base)
    table = base.replace('{"USD": 1.0}', '{"USD": 1.0, "GBP": 0.85}')
    change = Change("conv.py", "modified", added_lines=[(1, table.splitlines()[0])], new_text=table)
    assert "GBP" not in added_literals([change], tmp_path)
    guard = base.replace("    return", '    if code in ("GBP",):\n        return 0.85 * amount\n    return')
    change = Change("conv.py", "modified", added_lines=[(5, '    if code in ("GBP",):')], new_text=guard)
    assert "GBP" in added_literals([change], tmp_path)
