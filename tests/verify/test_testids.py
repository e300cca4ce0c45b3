"""Test ids compared across runs by what stays the same: a parametrized id that carries a memory address
(humanize's `test_naturalday[test_args8-<tests.test_time.FakeDate object at 0x7fa6b62250d0>]`) is the same test
in the base run and in the patched one."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import SANDBOX_IMAGE, SandboxConfig
from patcher.pipeline import verify_patch
from patcher.verify.testids import kept, missing, stable
from tests.support import cheats as c
from tests.support.helpers import make_repo

BASE = "tests/test_time.py::test_naturalday[test_args8-<tests.test_time.FakeDate object at 0x7fa6b62250d0>]"
PATCHED = "tests/test_time.py::test_naturalday[test_args8-<tests.test_time.FakeDate object at 0x7f01c2b3a4d0>]"


def test_an_address_in_an_id_is_not_part_of_the_test() -> None:
    assert stable(BASE) == stable(PATCHED) == (
        "tests/test_time.py::test_naturalday[test_args8-<tests.test_time.FakeDate object at 0x…>]")
    assert stable("tests/t.py::test_hex[0xff-0x10]") == "tests/t.py::test_hex[0xff-0x10]"  # short hex is a value
    assert missing({BASE, "t.py::test_a"}, {PATCHED}) == ["t.py::test_a"]
    assert kept({BASE, "t.py::test_a"}, {PATCHED}) == [BASE]  # named as the base run named it
    assert missing({BASE}, {"t.py::test_a"}) == [BASE]


TESTS = ("import pytest\n\nimport calc\n\n\nclass Box:\n    def __init__(self, n):\n        self.n = n\n\n\n"
         "@pytest.mark.parametrize('box', [Box(1), Box(2)], ids=str)\n"
         "def test_add(box):\n    assert calc.add(box.n, 1) == box.n + 1\n")
TRACEBACK = ('Traceback (most recent call last):\n  File "/app/tests/test_calc.py", line 5, in test_zero\n'
             "    assert calc.safe_div(1, 0) == 0\n"
             '  File "/app/calc.py", line 2, in safe_div\n    return a / b\nZeroDivisionError: division by zero\n')


@pytest.mark.docker
def test_tests_whose_ids_carry_addresses_are_no_regression(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "calc", {**c.FILES, "tests/test_boxes.py": TESTS})
    diff = c.make_diff(repo, tmp_path / "work", {"calc.py": c.FIXED})
    result = verify_patch(str(repo), diff, test_command=c.REPRO, suite_command=c.SUITE, traceback=TRACEBACK,
                          sandbox=SandboxConfig(image=SANDBOX_IMAGE, test_timeout_s=60), trace_dir=tmp_path)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.verification["pass_to_pass"]["regressions"] == []
