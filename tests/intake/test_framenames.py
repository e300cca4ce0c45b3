"""Every frame named as Python names it, on real pytest tracebacks of tests/data/tracebacks/nested.

Each test of that project fails through a frame that misleads a reader of pytest's long format: a function
that defines a nested one, decorated functions (a multi-line decorator too), a closure, a lambda, a list
comprehension and a generator expression (Python 3.11 frames), a method, an async function, a class body,
and chained exceptions (a cause, and an exception during handling). The truth is CPython's own `in NAME`
(`--tb=native`): every format must name each repository frame the same way, live and in the stored fixtures.
"""

from __future__ import annotations

import pytest

from patcher.intake import crash_site, map_frames, parse_traceback
from patcher.intake.framenames import printed_function, source_function
from tests.support.tracebacks import FORMATS, NESTED, NESTED_FILES, failures, run_pytest

CODE = "pkg/code.py"
CRASH_SITES = {  # test -> the function the harness sees the exception raised through (co_name)
    "test_outer": "outer",
    "test_decorated": "decorated",
    "test_lambda": "<lambda>",
    "test_listcomp": "with_listcomp",  # the comprehension's own frame exists only up to Python 3.11
    "test_genexpr": "<genexpr>",
    "test_first": "first",
    "test_chained": "load",
    "test_during": "during",
    "test_closure": "divide",
    "test_static": "make",
    "test_async": "fetch",
    "test_class_body": "Config",
}
AMBIGUOUS_LINES = {"test_lambda", "test_listcomp", "test_genexpr"}
"""`--tb=line` gives a line only; where a lambda or comprehension sits on it, the frame could be either."""

Links = list[list[tuple[str, int, str]]]


def repo_links(text: str) -> tuple[Links, tuple[str, str] | None]:
    parsed = map_frames(parse_traceback(text), NESTED_FILES, NESTED)
    links = [[(f.repo_path, f.line, f.function) for f in frames if f.repo_path] for frames, _ in parsed.chain]
    return links, crash_site(parsed)  # type: ignore[return-value]


def check_format(outputs: dict[str, str], tb: str) -> None:
    truth = failures(outputs["native"], "native")
    mine = failures(outputs[tb], tb)
    assert len(mine) == len(truth) == len(CRASH_SITES)
    for test, native, text in zip(CRASH_SITES, truth, mine, strict=True):
        links, site = repo_links(text)
        wanted = "" if tb == "line" and test in AMBIGUOUS_LINES else CRASH_SITES[test]
        assert site == (CODE, wanted), (tb, test)
        if tb != "line":  # --tb=line prints only the innermost frame of each exception
            assert links == repo_links(native)[0], (tb, test)


@pytest.fixture(scope="module")
def live() -> dict[str, str]:
    return {tb: run_pytest(tb) for tb in FORMATS}


@pytest.mark.parametrize("tb", FORMATS)
def test_real_pytest_output_names_every_frame(live: dict[str, str], tb: str) -> None:
    check_format(live, tb)


@pytest.mark.parametrize("tb", FORMATS)
def test_stored_fixtures_name_every_frame(tb: str) -> None:
    stored = {name: (NESTED.parent / f"nested_{name}.txt").read_text() for name in (tb, "native")}
    check_format(stored, tb)


def test_the_native_truth_names_nested_frames() -> None:
    links, site = repo_links(failures((NESTED.parent / "nested_native.txt").read_text(), "native")[1])
    assert links == [[("check_code.py", 26, "test_decorated"), (CODE, 7, "wrapper"), (CODE, 26, "decorated")]]
    assert site == (CODE, "decorated")


def test_a_nested_def_or_a_quoted_def_is_not_the_frame() -> None:
    entry = ["x = 1", "    def outer():", '        code = """', "def quoted():", '"""',
             "        def helper():", "            return 1", ">       return helper() / 0"]
    assert printed_function(entry, len(entry) - 1) == "outer"


def test_a_frame_that_starts_on_its_failing_line() -> None:
    assert printed_function([".0 = <list_iterator object>", ">   return {k: 1 / k for k in ks}"], 1) == "<dictcomp>"
    assert printed_function(["x = 0", ">   f = lambda x: 1 / x"], 1) == "<lambda>"
    assert printed_function([">   value = compute()"], 0) == ""  # module code: the repository's source tells
    assert printed_function([".0 = <it>", ">   return [f(x) for x in (y for y in ys)]"], 1) == ""


def test_source_names_the_code_running_a_line() -> None:
    text = (NESTED / CODE).read_text()
    assert source_function(text, 18) == "outer"  # after the nested helper's body
    assert source_function(text, 13) == "helper"
    assert source_function(text, 85) == "make"
    assert source_function(text, 80) == "Registry"  # a decorator's argument: the class body runs it
    assert source_function(text, 30) == ""  # a lambda on the line: either frame
    assert source_function(text, 1) == "<module>"
    assert source_function("def broken(:\n", 1) == ""


def test_qualified_names_are_cut_to_the_code_name() -> None:
    text = 'Traceback (most recent call last):\n  File "pkg/code.py", line 13, in outer.<locals>.helper\n' \
           "    return v + 1\nTypeError: boom\n"
    assert parse_traceback(text).frames[0].function == "helper"
