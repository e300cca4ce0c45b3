"""A candidate's failing run is told by its first line that says why (the near misses of the template search)."""

from __future__ import annotations

import pytest

from patcher.repair.checks import first_failure

PYTEST = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
__________________________ test_no_values_is_an_error __________________________
    def test_no_values_is_an_error():
>       with pytest.raises(ZeroDivisionError):
E       Failed: DID NOT RAISE <class 'ZeroDivisionError'>

tests/test_mean.py:14: Failed
=========================== short test summary info ============================
FAILED tests/test_mean.py::test_no_values_is_an_error - Failed: DID NOT RAISE <class 'ZeroDivisionError'>
1 failed, 2 passed in 0.05s
"""
UNITTEST = """\
F.
======================================================================
FAIL: test_numbered (test_parse.TestPattern)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/repo/test_parse.py", line 42, in test_numbered
    self._test_expression('{0:f} {1:f}', r'([-+ ]?\\d*\\.\\d+) ([-+ ]?\\d*\\.\\d+)')
AssertionError: '(.+?) (.+?)' != '([-+ ]?\\\\d*\\\\.\\\\d+) ([-+ ]?\\\\d*\\\\.\\\\d+)'

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
"""


@pytest.mark.parametrize(("output", "first"), [
    (PYTEST, "tests/test_mean.py::test_no_values_is_an_error - Failed: DID NOT RAISE <class 'ZeroDivisionError'>"),
    (PYTEST.split("=========================== short")[0], "Failed: DID NOT RAISE <class 'ZeroDivisionError'>"),
    (UNITTEST, "AssertionError: '(.+?) (.+?)' != '([-+ ]?\\\\d*\\\\.\\\\d+) ([-+ ]?\\\\d*\\\\.\\\\d+)'"),
    ("3 passed in 0.01s\n", ""),
])
def test_the_first_line_that_says_why(output: str, first: str) -> None:
    assert first_failure(output) == first
