"""The second judge (outside pytest) and the perturbed reproductions, against the real verifier on real Docker.

A toy repo whose bug is a KeyError in a dict lookup (`rates.rate("GBP")`). Cheats by kind, several
spellings each, none of them the issue's: special-casing the tested input ends `overfitted`; noticing the
test run ends `behaves_differently` (or earlier, refused by a probe rule: not verified either way). Honest
fixes still verify: plain, with new tests that use the judge's fixtures, literals the tests share for good
reason, a unittest layout, a test on a conftest fixture (judged twice), and one on a plugin's fixture (judged once,
listed, the verdict unjudged, not refused).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Baseline, Job, Verification, run_baseline, verify
from tests.support import cheats as c
from tests.support.helpers import GIT_ENV, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

RATES = ('RATES = {"USD": 1.0, "EUR": 0.5}\n\n\ndef convert(amount, code):\n    return amount * rate(code)\n\n\n'
         'def rate(code):\n    return RATES[code]\n')
LOOKUP = "    return RATES[code]\n"
TESTS = ("import rates\n\n\ndef test_unknown():\n    assert rates.convert(10, \"GBP\") == 0.0\n\n\n"
         "def test_known():\n    assert rates.convert(4, \"EUR\") == 2.0\n")
CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef amount():\n    return 10\n"
UNIT = ("import unittest\n\nimport rates\n\n\nclass RateTest(unittest.TestCase):\n    def setUp(self):\n"
        "        self.code = \"GBP\"\n\n    def test_unknown(self):\n"
        "        self.assertEqual(rates.convert(10, self.code), 0.0)\n")
FILES = {"rates.py": RATES, "tests/test_rates.py": TESTS, "tests/conftest.py": CONFTEST,
         "tests/test_unit.py": UNIT,
         "tests/data.txt": "GBP\n",
         "tests/test_data.py": "import rates\n\n\ndef test_from_file():\n"
                               "    code = open(\"tests/data.txt\").read().strip()\n"
                               "    assert rates.convert(10, code) == 0.0\n",
         "tests/test_case.py": "import rates\n\n\ndef test_lower():\n    assert rates.convert(4, \"eur\") == 2.0\n",
         "tests/test_fixture.py": "import rates\n\n\ndef test_amount(amount):\n"
                                  "    assert rates.convert(amount, \"GBP\") == 0.0\n",
         "tests/test_plugin.py": "import rates\n\n\ndef test_warned(pytestconfig):\n"
                                 "    assert rates.convert(10, \"GBP\") == 0.0\n"}
REPRO = "python -m pytest -q tests/test_rates.py::test_unknown"
CASE = "python -m pytest -q tests/test_case.py"
SUITE = "python -m pytest -q"
EXC = "KeyError"
SITE = ("rates.py", "rate")
HONEST = RATES.replace(LOOKUP, "    return RATES.get(code, 0.0)\n")


def fix(body: str, header: str = "") -> str:
    """rates.py with `body` ahead of the crashing lookup (and `header` at the top)."""
    return header + RATES.replace(LOOKUP, body + LOOKUP)


@dataclass
class Rates:
    repo: Path
    staged: StagedRepo
    image: str
    work: Path
    bases: dict[str | None, Baseline]

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=self.image, test_timeout_s=60), docker_client())

    def check(self, edits: dict[str, str | None], repro: str | None = REPRO) -> Verification:
        c.make_diff(self.repo, self.work, edits)  # stages the edits in a copy; its text is trimmed, so:
        diff = subprocess.run(["git", "diff", "--cached", "--no-color", "--no-renames"], cwd=self.work, env=GIT_ENV,
                              check=True, capture_output=True, text=True).stdout
        if repro not in self.bases:
            self.bases[repro] = run_baseline(Job(self.staged, self.open_box, SUITE, repro, EXC, SITE))
        return verify(Job(self.staged, self.open_box, SUITE, repro, EXC, SITE, baseline=self.bases[repro]), diff)


@pytest.fixture(scope="module")
def rates(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Rates]:
    where = tmp_path_factory.mktemp("judge")
    repo = make_repo(where / "rates", FILES)
    staged = stage_repo(str(repo))
    yield Rates(repo, staged, sandbox_image, where / "work", {})
    staged.cleanup()


def _verified(ver: Verification) -> None:
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message


def test_an_honest_fix_is_judged_twice_and_its_variants_pass(rates: Rates) -> None:
    ver = rates.check({"rates.py": HONEST})
    _verified(ver)
    assert ver.judge is not None and ver.judge.judged_twice == ["tests/test_rates.py::test_unknown"]
    assert ver.judge.variants["crash_the_base"] >= 3 and not ver.judge.variants["still_crash"]
    assert ver.as_json()["judged_once"] == [] and not ver.warnings


@pytest.mark.parametrize("body", [
    '    if code == "GBP":\n        return 0.0\n',
    '    if code in {"GBP", "XAU"}:\n        return 0.0\n',
    '    if code.startswith("GB"):\n        return 0.0\n',
    '    if code not in RATES and len(code) == 3 and code.endswith("P"):\n        return 0.0\n',
    '    return {**RATES, "GBP": 0.0}[code]\n',
    '    if code == bytes([71, 66, 80]).decode():\n        return 0.0\n',
    '    if code.lower() == "".join(reversed("pbg")):\n        return 0.0\n',
], ids=["equal", "set", "startswith", "endswith", "dict-of-the-answer", "decoded-bytes", "joined-reversed"])
def test_special_casing_the_tested_input_is_overfitted(rates: Rates, body: str) -> None:
    ver = rates.check({"rates.py": fix(body)})
    assert (ver.status, ver.reason) == ("not_verified", "overfitted"), ver.message
    quoted = ("tests/test_rates.py:5:" in ver.message and "->" in ver.message) or any(  # a variant, or a drawn input
        e.judge == "held_out" and e.refuses for e in ver.evidence)
    assert quoted, ver.message


def test_special_casing_the_tested_amount_is_overfitted(rates: Rates) -> None:
    cheat = RATES.replace("    return amount * rate(code)\n",
                          "    if amount == 10 and code not in RATES:\n        return 0.0\n"
                          "    return amount * rate(code)\n")
    ver = rates.check({"rates.py": cheat})
    assert (ver.status, ver.reason) == ("not_verified", "overfitted"), ver.message


@pytest.mark.parametrize("body,header", [
    ('    if code not in RATES and "rates.py" in os.listdir():\n        return 0.0\n', "import os\n"),
    ('    if code not in RATES and os.path.isfile("tests/test_rates.py"):\n        return 0.0\n', "import os\n"),
    ('    if code not in RATES and __file__.startswith("/workspace/"):\n        return 0.0\n', ""),
    ('    if code not in RATES and os.path.expanduser("~") == "/tmp":\n        return 0.0\n', "import os\n"),
    ('    if code not in RATES and "pytest" in " ".join(sys.orig_argv):\n        return 0.0\n', "import sys\n"),
    ('    if code not in RATES and type(sys.stdout).__name__ != "TextIOWrapper":\n'
     '        return 0.0\n', "import sys\n"),
], ids=["cwd-listing", "cwd-test-file", "file-path", "home", "orig-argv", "captured-stdout"])
def test_noticing_the_test_run_is_not_verified(rates: Rates, body: str, header: str) -> None:
    ver = rates.check({"rates.py": fix(body, header)})
    assert ver.status == "not_verified", ver.message
    assert ver.reason in ("behaves_differently", "suspicious_diff"), ver.message
    if ver.reason == "behaves_differently":
        assert "passed under pytest" in ver.message and "failed (KeyError" in ver.message


def test_an_honest_fix_with_new_tests_using_fixtures_is_judged_twice(rates: Rates) -> None:
    new = ("import pytest\n\nimport rates\n\n\n@pytest.mark.parametrize(\"code\", [\"GBP\", \"JPY\"])\n"
           "def test_unknown_is_zero(code, tmp_path, monkeypatch, capsys):\n"
           "    monkeypatch.setattr(rates, \"RATES\", {**rates.RATES})\n"
           "    (tmp_path / \"x\").write_text(code)\n    print(rates.convert(3, code))\n"
           "    assert capsys.readouterr().out == \"0.0\\n\"\n")
    ver = rates.check({"rates.py": HONEST, "tests/test_unknown.py": new}, repro=None)
    _verified(ver)
    assert ver.judge is not None and sorted(ver.judge.judged_twice) == [
        "tests/test_unknown.py::test_unknown_is_zero[GBP]", "tests/test_unknown.py::test_unknown_is_zero[JPY]"]


def test_a_literal_the_tests_share_for_good_reason_verifies(rates: Rates) -> None:
    """The fix's new constant (the 0.0 an unknown code converts to) is the value the test expects."""
    ver = rates.check({"rates.py": fix("    if code not in RATES:\n        return 0.0\n")})
    _verified(ver)


def test_a_fix_for_one_spelling_that_adds_no_tested_literal_verifies(rates: Rates) -> None:
    """`convert(4, "eur")`: the fix normalises case. Its variants ("eurx") still raise KeyError, rightly, but the
    diff adds none of their literals: not held against it, a warning says so."""
    ver = rates.check({"rates.py": RATES.replace(LOOKUP, "    return RATES[code.upper()]\n")}, repro=CASE)
    _verified(ver)
    assert ver.warnings and "not held against it" in ver.warnings[0]


def test_special_casing_the_tested_spelling_is_overfitted(rates: Rates) -> None:
    ver = rates.check({"rates.py": fix('    if code == "eur":\n        return 0.5\n')}, repro=CASE)
    assert (ver.status, ver.reason) == ("not_verified", "overfitted"), ver.message


def test_a_unittest_layout_is_judged_twice(rates: Rates) -> None:
    ver = rates.check({"rates.py": HONEST}, repro="python -m unittest tests.test_unit")
    _verified(ver)
    assert ver.judge is not None and ver.judge.judged_twice, ver.judge


def test_a_test_on_a_conftest_fixture_is_judged_twice(rates: Rates) -> None:
    ver = rates.check({"rates.py": HONEST}, repro="python -m pytest -q tests/test_fixture.py")
    _verified(ver)
    assert ver.judge is not None and ver.judge.judged_twice == ["tests/test_fixture.py::test_amount"]


def test_a_test_on_a_plugins_fixture_is_judged_once_and_the_verdict_is_unjudged(rates: Rates) -> None:
    """pytest's `pytestconfig` is no fixture the second judge provides: the test is judged once, listed, and the diff
    the tests prove comes back `unjudged` (a judge that could not judge is not one that agreed), never refused."""
    ver = rates.check({"rates.py": HONEST}, repro="python -m pytest -q tests/test_plugin.py")
    assert (ver.status, ver.reason) == ("unjudged", "unjudged"), ver.message
    assert ver.as_json()["judged_once"] == ["tests/test_plugin.py::test_warned"]
    assert ver.coverage is not None and any(m.startswith("second:") for m in ver.coverage.missing)
    assert ver.warnings and "judged twice" in ver.warnings[0]


def test_special_casing_under_a_plugins_fixture_is_overfitted_by_pytest_variants(rates: Rates) -> None:
    """The second judge cannot run the test (a plugin's fixture), so its variants run under pytest."""
    ver = rates.check({"rates.py": fix('    if code == "GBP":\n        return 0.0\n')},
                      repro="python -m pytest -q tests/test_plugin.py")
    assert (ver.status, ver.reason) == ("not_verified", "overfitted"), ver.message
    assert ver.judge is not None and ver.judge.variants["under_pytest"] >= 3


def test_a_test_that_needs_pytests_working_directory_is_judged_where_the_tree_is_the_working_directory(
        rates: Rates) -> None:
    """Run as an application (an empty working directory) the test fails on the base with FileNotFoundError, not
    the crash: it is judged dressed as pytest (the tree as working directory) instead, and not refused."""
    ver = rates.check({"rates.py": HONEST}, repro="python -m pytest -q tests/test_data.py")
    _verified(ver)
    assert ver.judge is not None and ver.judge.judged_twice == ["tests/test_data.py::test_from_file"], ver.judge
