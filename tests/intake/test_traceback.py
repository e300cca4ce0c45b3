"""Traceback parsing and frame mapping.

The fixtures under data/tracebacks were captured from python3.11/3.13 and pytest 9 runs of a small
project (`shop`, in /tmp/tbgen); log, docker-compose, kubectl, deployed-path and Windows variants wrap
or rewrite those real tracebacks.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import ExceptionInfo, innermost_repo_frames, map_frames, parse_traceback
from patcher.intake.frames import map_path
from patcher.intake.traceback import NO_TRACEBACK

DATA = Path(__file__).parents[1] / "data" / "tracebacks"
T = "/tmp/tbgen/"
# The project the fixtures came from, as `git ls-files` lists it, plus decoys: a second shop/pricing.py
# (ties on suffix length with src/shop/pricing.py for site-packages paths) and a decoder.py that
# stdlib json/decoder.py must not map to.
REPO_FILES = [
    "bad_syntax.py",
    "run_caret.py",
    "run_cause.py",
    "run_during.py",
    "run_group.py",
    "run_importsyntax.py",
    "run_logged.py",
    "run_multiline.py",
    "run_plain.py",
    "run_prefixed.py",
    "run_recursion.py",
    "src/shop/__init__.py",
    "src/shop/broken.py",
    "src/shop/cart.py",
    "src/shop/decoder.py",
    "src/shop/pricing.py",
    "src/shop/web.py",
    "tests/test_assert.py",
    "tests/test_cart.py",
    "tests/test_collect.py",
    "vendor/shop/pricing.py",
]


def load(name: str) -> str:
    return (DATA / name).read_bytes().decode()  # bytes: keep the \r\n of the Windows fixture


@dataclass
class Case:
    fixture: str
    kind: str
    exception: tuple[str, str] | None
    chain: list[str | None]  # exception type of each traceback in the chain, causes first
    frame_count: int
    # the innermost frames, as (file, line, function, source, repo_path)
    frames: list[tuple[str, int, str, str | None, str | None]]
    failing_tests: list[str] = field(default_factory=list)


CASES = [
    Case(
        "chained_cause.txt",
        "cpython",
        ("shop.pricing.PricingError", "unknown currency 'GBP'"),
        chain=["KeyError", "shop.pricing.PricingError"],
        frame_count=3,
        frames=[
            (T + "run_cause.py", 2, "<module>", 'checkout(Cart([{"price": 3}]), "GBP")', "run_cause.py"),
            (T + "src/shop/cart.py", 16, "checkout", "rate = pricing.load_rate(currency)", "src/shop/cart.py"),
            (
                T + "src/shop/pricing.py",
                20,
                "load_rate",
                'raise PricingError(f"unknown currency {currency!r}") from e',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "chained_during.txt",
        "cpython",
        ("ValueError", "invalid literal for int() with base 10: 'GBP'"),
        chain=["KeyError", "ValueError"],
        frame_count=2,
        frames=[
            (T + "run_during.py", 2, "<module>", 'pricing.load_rate_sloppy("GBP")', "run_during.py"),
            (T + "src/shop/pricing.py", 27, "load_rate_sloppy", "return int(currency)", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "deployed_paths.txt",
        "cpython",
        ("json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
        chain=["json.decoder.JSONDecodeError"],
        frame_count=8,
        frames=[
            (
                "/usr/local/lib/python3.11/site-packages/gunicorn/workers/sync.py",
                135,
                "handle",
                "self.handle_request(listener, req, client, addr)",
                None,
            ),
            (
                "/usr/local/lib/python3.11/site-packages/gunicorn/workers/sync.py",
                178,
                "handle_request",
                "respiter = self.wsgi(environ, resp.start_response)",
                None,
            ),
            (
                "/srv/releases/2024-05-01/shop/web.py",
                31,
                "app",
                'body = checkout(cart, environ["HTTP_X_CURRENCY"])',
                "src/shop/web.py",
            ),
            ("/app/src/shop/cart.py", 16, "checkout", "rate = pricing.load_rate(currency)", "src/shop/cart.py"),
            (
                "/usr/lib/python3.11/site-packages/shop/pricing.py",
                18,
                "load_rate",
                "return json.loads(RATES_JSON)[currency]",
                "src/shop/pricing.py",
            ),
            ("/usr/local/lib/python3.11/json/__init__.py", 346, "loads", "return _default_decoder.decode(s)", None),
            (
                "/usr/local/lib/python3.11/json/decoder.py",
                337,
                "decode",
                "obj, end = self.raw_decode(s, idx=_w(s, 0).end())",
                None,
            ),
            (
                "/usr/local/lib/python3.11/json/decoder.py",
                355,
                "raw_decode",
                'raise JSONDecodeError("Expecting value", s, err.value) from None',
                None,
            ),
        ],
    ),
    Case(
        "docker_compose.txt",
        "cpython",
        ("shop.pricing.PricingError", "unknown currency 'GBP'"),
        chain=["KeyError", "shop.pricing.PricingError"],
        frame_count=3,
        frames=[
            ("/app/run_cause.py", 2, "<module>", 'checkout(Cart([{"price": 3}]), "GBP")', "run_cause.py"),
            ("/app/src/shop/cart.py", 16, "checkout", "rate = pricing.load_rate(currency)", "src/shop/cart.py"),
            (
                "/app/src/shop/pricing.py",
                20,
                "load_rate",
                'raise PricingError(f"unknown currency {currency!r}") from e',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "exception_group.txt",
        "cpython",
        ("ExceptionGroup", "rates failed (2 sub-exceptions)"),
        chain=["ExceptionGroup", "KeyError", "shop.pricing.PricingError", "KeyError", "shop.pricing.PricingError"],
        frame_count=2,
        frames=[
            (T + "run_group.py", 12, "<module>", "main()", "run_group.py"),
            (T + "run_group.py", 10, "main", 'raise ExceptionGroup("rates failed", errors)', "run_group.py"),
        ],
    ),
    Case(
        "kubectl_exception_group.txt",
        "cpython",
        ("ExceptionGroup", "rates failed (2 sub-exceptions)"),
        chain=["ExceptionGroup", "KeyError", "shop.pricing.PricingError", "KeyError", "shop.pricing.PricingError"],
        frame_count=2,
        frames=[
            ("/srv/app/run_group.py", 12, "<module>", "main()", "run_group.py"),
            ("/srv/app/run_group.py", 10, "main", 'raise ExceptionGroup("rates failed", errors)', "run_group.py"),
        ],
    ),
    Case(
        "logged_every_line.txt",
        "cpython",
        ("ValueError", "invalid literal for int() with base 10: 'GBP'"),
        chain=["KeyError", "ValueError"],
        frame_count=2,
        frames=[
            (T + "run_prefixed.py", 22, "<module>", 'pricing.load_rate_sloppy("GBP")', "run_prefixed.py"),
            (T + "src/shop/pricing.py", 27, "load_rate_sloppy", "return int(currency)", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "logged_timestamps.txt",
        "cpython",
        ("KeyError", "'GBP'"),
        chain=["KeyError"],
        frame_count=4,
        frames=[
            (T + "run_logged.py", 7, "<module>", 'Cart([{"price": 3}]).total("GBP")', "run_logged.py"),
            (
                T + "src/shop/cart.py",
                9,
                "total",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            (
                T + "src/shop/cart.py",
                9,
                "<genexpr>",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            (T + "src/shop/pricing.py", 9, "convert", "return amount * RATES[currency]", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "plain.txt",
        "cpython",
        ("KeyError", "'GBP'"),
        chain=["KeyError"],
        frame_count=4,
        frames=[
            (T + "run_plain.py", 2, "<module>", 'print(Cart([{"price": 3}]).total("GBP"))', "run_plain.py"),
            (
                T + "src/shop/cart.py",
                9,
                "total",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            (
                T + "src/shop/cart.py",
                9,
                "<genexpr>",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            (T + "src/shop/pricing.py", 9, "convert", "return amount * RATES[currency]", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "py311_carets.txt",
        "cpython",
        ("KeyError", "'percent'"),
        chain=["KeyError"],
        frame_count=4,
        frames=[
            (T + "run_caret.py", 2, "<module>", 'Cart([{"price": 3}]).discounted({"pct": 5})', "run_caret.py"),
            (
                T + "src/shop/cart.py",
                12,
                "discounted",
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                T + "src/shop/cart.py",
                12,
                "<listcomp>",
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                T + "src/shop/pricing.py",
                13,
                "apply_discount",
                'return price - price * discount["percent"] / 100',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "py313_color.txt",
        "cpython",
        ("ValueError", "invalid literal for int() with base 10: 'GBP'"),
        chain=["KeyError", "ValueError"],
        frame_count=2,
        frames=[
            (T + "run_during.py", 2, "<module>", 'pricing.load_rate_sloppy("GBP")', "run_during.py"),
            (T + "src/shop/pricing.py", 27, "load_rate_sloppy", "return int(currency)", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "py313_multiline.txt",
        "cpython",
        ("ValueError", "bad report\nvalues: [1.0]\nhint: check the rates"),
        chain=["ValueError"],
        frame_count=2,
        frames=[
            (T + "run_multiline.py", 12, "<module>", "report(", "run_multiline.py"),
            (T + "run_multiline.py", 5, "report", "raise ValueError(", "run_multiline.py"),
        ],
    ),
    Case(
        "pytest_assert_long.txt",
        "pytest",
        ("ValueError", "bad report\nvalues: [1.0]\nhint: check the rates"),
        chain=["ValueError"],
        frame_count=1,
        failing_tests=["tests/test_assert.py::test_discount_value", "tests/test_assert.py::test_multiline"],
        frames=[
            (
                "tests/test_assert.py",
                12,
                "test_multiline",
                'raise ValueError("bad report\\nvalues: [1.0]\\nhint: check the rates")',
                "tests/test_assert.py",
            ),
        ],
    ),
    Case(
        "pytest_collect_errors.txt",
        "pytest",
        ("ModuleNotFoundError", "No module named 'shop.nope'"),
        chain=["ModuleNotFoundError"],
        frame_count=2,
        failing_tests=["tests/test_broken.py", "tests/test_collect.py"],
        frames=[
            (
                "/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py",
                126,
                "import_module",
                "return _bootstrap._gcd_import(name[level:], package, level)",
                None,
            ),
            ("tests/test_collect.py", 1, "<module>", "import shop.nope  # noqa", "tests/test_collect.py"),
        ],
    ),
    Case(
        "pytest_long.txt",
        "pytest",
        ("KeyError", "'percent'"),
        chain=["KeyError"],
        frame_count=4,
        failing_tests=[
            "tests/test_cart.py::test_total_gbp",
            "tests/test_cart.py::TestCheckout::test_checkout[JPY]",
            "tests/test_cart.py::TestCheckout::test_discount",
        ],
        frames=[
            (
                "tests/test_cart.py",
                20,
                "test_discount",
                'assert Cart([{"price": 5}]).discounted({"pct": 10}) == [4.5]',
                "tests/test_cart.py",
            ),
            (
                "src/shop/cart.py",
                12,
                "discounted",
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                "src/shop/cart.py",
                12,
                "<listcomp>",  # pytest shows the comprehension's implicit `.0` argument
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                "src/shop/pricing.py",
                13,
                "apply_discount",
                'return price - price * discount["percent"] / 100',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "pytest_native.txt",
        "pytest",
        ("shop.pricing.PricingError", "unknown currency 'JPY'"),
        chain=["KeyError", "shop.pricing.PricingError"],
        frame_count=26,
        failing_tests=["tests/test_cart.py::test_total_gbp", "tests/test_cart.py::TestCheckout::test_checkout[JPY]"],
        frames=[
            (
                T + "tests/test_cart.py",
                17,
                "test_checkout",
                'assert checkout(Cart([{"price": 5}]), currency) > 0',
                "tests/test_cart.py",
            ),
            (T + "src/shop/cart.py", 16, "checkout", "rate = pricing.load_rate(currency)", "src/shop/cart.py"),
            (
                T + "src/shop/pricing.py",
                20,
                "load_rate",
                'raise PricingError(f"unknown currency {currency!r}") from e',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "pytest_short.txt",
        "pytest",
        ("KeyError", "'percent'"),
        chain=["KeyError"],
        frame_count=4,
        failing_tests=[
            "tests/test_cart.py::test_total_gbp",
            "tests/test_cart.py::TestCheckout::test_checkout[JPY]",
            "tests/test_cart.py::TestCheckout::test_discount",
        ],
        frames=[
            (
                "tests/test_cart.py",
                20,
                "test_discount",
                'assert Cart([{"price": 5}]).discounted({"pct": 10}) == [4.5]',
                "tests/test_cart.py",
            ),
            (
                "src/shop/cart.py",
                12,
                "discounted",
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                "src/shop/cart.py",
                12,
                "<listcomp>",
                'return [pricing.apply_discount(i["price"], discount) for i in self.items]',
                "src/shop/cart.py",
            ),
            (
                "src/shop/pricing.py",
                13,
                "apply_discount",
                'return price - price * discount["percent"] / 100',
                "src/shop/pricing.py",
            ),
        ],
    ),
    Case(
        "pytest_summary_only.txt",
        "pytest",
        ("KeyError", "'percent'"),
        chain=[],
        frame_count=0,
        failing_tests=[
            "tests/test_cart.py::test_total_gbp",
            "tests/test_cart.py::TestCheckout::test_checkout[JPY]",
            "tests/test_cart.py::TestCheckout::test_discount",
        ],
        frames=[],
    ),
    Case(
        "recursion.txt",
        "cpython",
        ("RecursionError", "maximum recursion depth exceeded"),
        chain=["RecursionError"],
        frame_count=4,
        frames=[
            (T + "run_recursion.py", 2, "<module>", "pricing.depth(0)", "run_recursion.py"),
            (T + "src/shop/pricing.py", 31, "depth", "return depth(n + 1)", "src/shop/pricing.py"),
            (T + "src/shop/pricing.py", 31, "depth", "return depth(n + 1)", "src/shop/pricing.py"),
            (T + "src/shop/pricing.py", 31, "depth", "return depth(n + 1)", "src/shop/pricing.py"),
        ],
    ),
    Case(
        "syntax_error.txt",
        "cpython",
        ("SyntaxError", "invalid syntax"),
        chain=["SyntaxError"],
        frame_count=1,
        frames=[
            (T + "bad_syntax.py", 2, "", "return x +* 2", "bad_syntax.py"),
        ],
    ),
    Case(
        "syntax_error_on_import.txt",
        "cpython",
        ("SyntaxError", "invalid syntax"),
        chain=["SyntaxError"],
        frame_count=2,
        frames=[
            (T + "run_importsyntax.py", 1, "<module>", "import shop.broken", "run_importsyntax.py"),
            (T + "src/shop/broken.py", 1, "", "def f(:", "src/shop/broken.py"),
        ],
    ),
    Case(
        "windows_paths.txt",
        "cpython",
        ("KeyError", "'GBP'"),
        chain=["KeyError"],
        frame_count=4,
        frames=[
            ("C:\\app\\run_plain.py", 2, "<module>", 'print(Cart([{"price": 3}]).total("GBP"))', "run_plain.py"),
            (
                "C:\\app\\src\\shop\\cart.py",
                9,
                "total",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            (
                "C:\\app\\src\\shop\\cart.py",
                9,
                "<genexpr>",
                'return sum(pricing.convert(i["price"], currency) for i in self.items)',
                "src/shop/cart.py",
            ),
            ("C:\\app\\src\\shop\\pricing.py", 9, "convert", "return amount * RATES[currency]", "src/shop/pricing.py"),
        ],
    ),
]


def test_every_fixture_has_a_case() -> None:
    nested = {p.name for p in DATA.glob("nested_*.txt")}  # tests/intake/test_framenames.py reads those
    assert sorted(c.fixture for c in CASES) == sorted(p.name for p in DATA.glob("*.txt") if p.name not in nested)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_parse_and_map_fixture(case: Case) -> None:
    parsed = map_frames(parse_traceback(load(case.fixture)), REPO_FILES)

    assert parsed.kind == case.kind
    exception = parsed.exception and (parsed.exception.type, parsed.exception.message)
    assert exception == case.exception
    assert [exc.type if exc else None for _, exc in parsed.chain] == case.chain
    assert parsed.failing_tests == case.failing_tests
    assert len(parsed.frames) == case.frame_count
    tail = parsed.frames[len(parsed.frames) - len(case.frames) :]
    assert [(f.file, f.line, f.function, f.source, f.repo_path) for f in tail] == case.frames
    assert all(f.external == (f.repo_path is None) for frames, _ in parsed.chain for f in frames)
    if parsed.chain:
        assert parsed.frames in [frames for frames, _ in parsed.chain]


@pytest.mark.parametrize(
    ("file", "repo_files", "expected"),
    [
        ("/app/src/pkg/m.py", ["pkg/m.py", "src/pkg/m.py"], "src/pkg/m.py"),  # longest suffix
        ("/usr/lib/python3.11/site-packages/pkg/m.py", ["src/pkg/m.py"], "src/pkg/m.py"),
        ("/srv/releases/2024-05-01/pkg/m.py", ["vendor/pkg/m.py", "pkg/m.py"], "pkg/m.py"),  # tie: shorter
        ("C:\\app\\pkg\\m.py", ["src/pkg/m.py"], "src/pkg/m.py"),
        ("tests/test_x.py", ["tests/test_x.py", "other/tests/test_x.py"], "tests/test_x.py"),
        ("/app/utils.py", ["lib/utils.py"], "lib/utils.py"),  # file name alone, but unique
        ("/app/utils.py", ["a/utils.py", "b/utils.py"], None),  # file name alone, ambiguous
        ("/app/pkg/__init__.py", ["pkg/__init__.py", "other/__init__.py"], "pkg/__init__.py"),
        ("/app/x/__init__.py", ["pkg/__init__.py", "other/__init__.py"], None),
        ("/usr/lib/python3.11/json/decoder.py", ["app/decoder.py"], None),  # stdlib, not in the repo
        ("/usr/lib/python3.11/json/decoder.py", ["json/decoder.py"], "json/decoder.py"),
        ("C:\\Python311\\Lib\\json\\decoder.py", ["app/decoder.py"], None),
        ("/venv/lib/python3.12/site-packages/requests/utils.py", ["app/utils.py"], None),
        ("/venv/lib/python3.12/site-packages/app/sub/m.py", ["src/other/sub/m.py"], None),  # whole module path
        ("/app/m.py", ["am.py"], None),
        ("/app/m.py", [], None),
        ("<string>", ["<string>"], None),
        ("<frozen importlib._bootstrap>", ["importlib/_bootstrap.py"], None),
    ],
)
def test_map_path(file: str, repo_files: list[str], expected: str | None) -> None:
    assert map_path(file, repo_files) == expected


def test_innermost_repo_frames_first_innermost() -> None:
    parsed = map_frames(parse_traceback(load("deployed_paths.txt")), REPO_FILES)
    assert [(f.repo_path, f.line) for f in innermost_repo_frames(parsed)] == [
        ("src/shop/pricing.py", 18),
        ("src/shop/cart.py", 16),
        ("src/shop/web.py", 31),
    ]


def test_innermost_repo_frames_fall_back_to_the_cause() -> None:
    text = """\
Traceback (most recent call last):
  File "/app/src/shop/pricing.py", line 18, in load_rate
    return RATES[currency]
KeyError: 'GBP'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/usr/lib/python3.11/logging/__init__.py", line 1110, in emit
    msg = self.format(record)
ValueError: bad format
"""
    parsed = map_frames(parse_traceback(text), REPO_FILES)
    assert parsed.exception is not None and parsed.exception.type == "ValueError"
    assert [(f.repo_path, f.line) for f in innermost_repo_frames(parsed)] == [("src/shop/pricing.py", 18)]
    assert innermost_repo_frames(parse_traceback(text)) == []  # nothing is a repo frame before mapping


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end)]


def test_pytest_sections_without_summary_name_their_tests() -> None:
    for fixture in ("pytest_long.txt", "pytest_short.txt"):
        parsed = parse_traceback(_between(load(fixture), "=== FAILURES", "=== short test summary"))
        assert parsed.failing_tests == [
            "tests/test_cart.py::test_total_gbp",
            "tests/test_cart.py::TestCheckout::test_checkout[JPY]",
            "tests/test_cart.py::TestCheckout::test_discount",
        ]


def test_pytest_assertion_failures() -> None:
    section = _between(load("pytest_assert_long.txt"), "_____", "_____ test_multiline")
    parsed = parse_traceback(section)
    assert parsed.exception is not None
    assert (parsed.exception.type, parsed.exception.message) == (
        "AssertionError",
        "discount not applied\nassert 5.0 == 4.5",
    )
    assert parsed.failing_tests == ["tests/test_assert.py::test_discount_value"]

    rewritten = """\
____________________________ test_add ____________________________

    def test_add():
>       assert add(2, 2) == 5
E       assert 4 == 5
E        +  where 4 = add(2, 2)

tests/test_math.py:4: AssertionError
"""
    parsed = parse_traceback(rewritten)
    assert parsed.exception is not None
    assert (parsed.exception.type, parsed.exception.message) == (
        "AssertionError",
        "assert 4 == 5\n +  where 4 = add(2, 2)",
    )
    assert [(f.file, f.line, f.function, f.source) for f in parsed.frames] == [
        ("tests/test_math.py", 4, "test_add", "assert add(2, 2) == 5")
    ]


def test_pytest_summary_lines() -> None:
    parsed = parse_traceback(
        "FAILED tests/test_cart.py::TestCheckout::test_checkout[JPY] - shop.pricing.Pr...\n"
        "FAILED tests/test_cart.py::test_odd[a b] - assert 1 == 2\n"
        "ERROR tests/test_broken.py\n"
    )
    assert parsed.failing_tests == [
        "tests/test_cart.py::TestCheckout::test_checkout[JPY]",
        "tests/test_cart.py::test_odd[a b]",
        "tests/test_broken.py",
    ]
    assert parsed.exception is not None
    assert (parsed.exception.type, parsed.exception.message) == ("AssertionError", "assert 1 == 2")
    truncated = parse_traceback("FAILED tests/t.py::test_k - shop.pricing.Pr...\n")
    assert truncated.exception is None  # a cut-off type is no type


def test_pytest_9_subtest_summary_lines_name_their_tests() -> None:
    parsed = parse_traceback(
        "SUBFAILED(iterable=range(0, 4)) tests/test_more.py::LastTests::test_basic - V...\n"
        "SUBFAILED(args=(range(0, 1), None)) tests/test_more.py::LastTests::test_default\n"
    )
    assert parsed.failing_tests == ["tests/test_more.py::LastTests::test_basic",
                                    "tests/test_more.py::LastTests::test_default"]


def test_log_prefixes() -> None:
    plain = load("plain.txt")
    other_worker = "[worker-4] GET /health 200\n"
    variants = {
        "header only": "worker crashed: " + plain,
        "markdown indent": "".join("    " + line + "\n" for line in plain.splitlines()),
        "mail quote": "".join("> " + line + "\n" for line in plain.splitlines()),
        "every line": "".join("[worker-3] " + line + "\n" for line in plain.splitlines()) + other_worker,
    }
    for name, text in variants.items():
        parsed = parse_traceback(text)
        assert parsed.exception is not None, name
        assert (parsed.exception.type, parsed.exception.message) == ("KeyError", "'GBP'"), name
        assert [(f.line, f.function) for f in parsed.frames] == [
            (2, "<module>"),
            (9, "total"),
            (9, "<genexpr>"),
            (9, "convert"),
        ], name


def test_exception_lines() -> None:
    text = """\
Traceback (most recent call last):
  File "/app/x.py", line 3, in f
    raise E("boom")
__main__.f.<locals>.E: boom
"""
    parsed = parse_traceback(text)
    assert parsed.exception is not None and parsed.exception.type == "__main__.f.<locals>.E"
    parsed = parse_traceback(text.replace("__main__.f.<locals>.E: boom", "KeyboardInterrupt"))
    assert parsed.exception is not None
    assert (parsed.exception.type, parsed.exception.message) == ("KeyboardInterrupt", "")


@pytest.mark.parametrize(
    "text",
    ["", "  \n\n", "hello world\nfoo: bar\n", "KeyError: 'GBP'\n", "Traceback (most recent call last):\n"],
    ids=["empty", "blank", "garbage", "exception only", "header only"],
)
def test_no_traceback_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_traceback(text)
    assert str(caught.value) == NO_TRACEBACK
    assert "\n" not in NO_TRACEBACK and caught.value.exit_code == 2


def test_a_unittest_report_names_its_failing_tests(tmp_path: Path) -> None:
    """Real `python -m unittest` output: the ids of the failing tests, the last failure's crash as primary."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "test_shop.py").write_text(
        "import unittest\n\n\ndef price(d):\n    return d['price']\n\n\nclass Shop(unittest.TestCase):\n"
        "    def test_price(self):\n        price({})\n\n    def test_sum(self):\n        self.assertEqual(1, 2)\n\n"
        "    def test_ok(self):\n        pass\n")
    done = subprocess.run([sys.executable, "-m", "unittest", "pkg.test_shop"], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    parsed = map_frames(parse_traceback(done.stderr), ["pkg/__init__.py", "pkg/test_shop.py"])
    assert parsed.failing_tests == ["pkg.test_shop.Shop.test_price", "pkg.test_shop.Shop.test_sum"]
    assert parsed.exception == ExceptionInfo("AssertionError", "1 != 2")
    assert [(f.repo_path, f.function) for f in parsed.frames] == [("pkg/test_shop.py", "test_sum")]
    older = parse_traceback("ERROR: test_price (pkg.test_shop.Shop)\n" + done.stderr.split("\n", 3)[3])
    assert older.failing_tests[0] == "pkg.test_shop.Shop.test_price"  # Python before 3.11 names the class only
