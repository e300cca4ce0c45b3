"""Whether a failed setup or base run points at the interpreter (another Python may do), read from its output."""

from __future__ import annotations

import pytest

from patcher.env.symptoms import import_symptom, setup_symptom


@pytest.mark.parametrize(("text", "said"), [
    ("E   AttributeError: module 'collections' has no attribute 'Mapping'",
     "`module 'collections' has no attribute 'Mapping'`"),
    ("ImportError: cannot import name 'Mapping' from 'collections' (/usr/lib/python3.11/collections/__init__.py)",
     "`cannot import name 'Mapping' from 'collections'`"),
    ("ModuleNotFoundError: No module named 'distutils'", "`No module named 'distutils'`"),
    ("ModuleNotFoundError: No module named 'imp'", "`No module named 'imp'`"),
    ('  File "/w/pkg/a.py", line 3\n    match x:\n          ^\nSyntaxError: invalid syntax',
     "`SyntaxError: invalid syntax`"),
    ("TypeError: 'type' object is not subscriptable", "`TypeError: 'type' object is not subscriptable`"),
    # what another Python cannot mend: a package not installed, the repository's own names, a test's failure
    ("ModuleNotFoundError: No module named 'requests'", None),
    ("ModuleNotFoundError: No module named 'test.test_utils'", None),
    ("AttributeError: module 'mylib' has no attribute 'helper'", None),
    ("AssertionError: assert 1 == 2", None),
])
def test_an_import_symptom_names_the_standard_library_or_the_syntax(text: str, said: str | None) -> None:
    assert import_symptom(text, None) == said


def test_the_reported_crash_itself_is_never_a_reason_to_leave_a_python() -> None:
    crash = "AttributeError: module 'time' has no attribute 'clock'"
    assert import_symptom(f"E   {crash}", crash) is None
    assert import_symptom(f"E   {crash}\nE   ImportError: cannot import name 'Mapping' from 'collections'",
                          crash) == "`cannot import name 'Mapping' from 'collections'`"


def test_a_setup_symptom_is_a_build_or_a_requirement_that_needs_another_python() -> None:
    assert setup_symptom("× Getting requirements to build editable did not run successfully.\n"
                         "ModuleNotFoundError: No module named 'setuptools.command.test'") == (
        "the project's build did not run there")
    assert setup_symptom("ERROR: Package 'x' requires a different Python: 3.9.2 not in '>=3.10'") == (
        "a requirement needs another Python")
    assert setup_symptom("Failed building wheel for lxml\n  error: command 'gcc' failed") == "a build failed there"
    assert setup_symptom("ERROR: No matching distribution found for mock==99") is None
