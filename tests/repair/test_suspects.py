"""A crash report's local variables as evidence for the offline engine: the variable holding the value the
exception complains of is followed back first, so its assignment is tried before the crash line's other
sources."""

from __future__ import annotations

from pathlib import Path

from patcher.intake import ExceptionInfo, parse_traceback
from patcher.repair import candidates
from patcher.repair.dataflow import feeding_lines
from patcher.repair.edits import Source
from patcher.repair.suspects import suspicious_names
from tests.support.helpers import make_repo

STATS = '''def ratio(values, weight):
    count = len(values) - 1
    scale = weight / 10
    return scale / count
'''
TB = '''Traceback (most recent call last):
  File "/srv/app/stats/calc.py", line 4, in ratio
    return scale / count
{locals}ZeroDivisionError: float division by zero
'''


def test_the_variable_holding_the_bad_value_is_named() -> None:
    zero = ExceptionInfo("ZeroDivisionError", "division by zero")
    assert suspicious_names((("scale", "1.0"), ("count", "0")), zero) == ["count"]
    none = ExceptionInfo("AttributeError", "'NoneType' object has no attribute 'x'")
    assert suspicious_names((("user", "None"), ("n", "0")), none) == ["user"]
    assert suspicious_names((("i", "25"), ("items", "['a']")), ExceptionInfo("IndexError", "out of range")) == ["i"]
    assert suspicious_names((("k", "'amount'"),), ExceptionInfo("KeyError", "'amount'")) == ["k"]
    assert suspicious_names((("k", "1"),), ExceptionInfo("ValueError", "bad")) == []


def test_its_assignment_comes_before_the_other_sources() -> None:
    src = Source.parse("stats/calc.py", STATS)
    assert feeding_lines(src, 4) == [3, 2]
    assert feeding_lines(src, 4, ["count"]) == [2, 3]


def test_the_offline_engine_tries_it_first_when_the_report_has_values(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"stats/__init__.py": "", "stats/calc.py": STATS})
    plain = parse_traceback(TB.format(locals=""))
    told = parse_traceback(TB.format(locals="    values = [5]\n    weight = 10\n    count = 0\n    scale = 1.0\n"))
    assert told.frames[0].locals[2] == ("count", "0")

    def first_line_off_the_crash(parsed: object) -> int:
        return next(c.line for c in candidates(parsed, repo) if c.line != 4)  # type: ignore[arg-type]

    assert first_line_off_the_crash(plain) == 3
    assert first_line_off_the_crash(told) == 2
