"""Every judge applies to a repository as it comes: the same bug, the same honest fix and the same cheat on a bare
tree and on packaged twins (a two-line setup.py, a src layout under setuptools' pyproject, hatchling, tests as a
package run by unittest), each set up for real by patcher's own setup step (the project installed editable), on
real Docker. The packaged twins are judged exactly as the bare tree: the fix verified with a fail-to-pass test
judged twice and held-out inputs compared on both sides, the cheat refused.

Before each side's process imported its own copy (sandbox/judge/roots.py), an editable install's path made the
base's side import the diff's code: the test judged once and no held-out input compared, the cheat `verified`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.pipeline import verify_patch
from tests.support.cheats import make_diff
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image"), pytest.mark.timeout(900)]

RATES = ('RATES = {"USD": 1.0, "EUR": 0.5, "JPY": 150.0}\n\n\ndef convert(amount, code):\n'
         "    return round(amount * RATES[code], 2)\n")
TESTS = ("from mypkg.rates import convert\n\n\ndef test_usd():\n    assert convert(10, 'USD') == 10.0\n\n\n"
         "def test_gbp():\n    assert convert(100, 'GBP') == 85.0\n")
UNITTESTS = ("import unittest\n\nfrom mypkg.rates import convert\n\n\nclass RateTest(unittest.TestCase):\n"
             "    def test_usd(self):\n        self.assertEqual(convert(10, 'USD'), 10.0)\n\n"
             "    def test_gbp(self):\n        self.assertEqual(convert(100, 'GBP'), 85.0)\n")
HONEST = RATES.replace('"JPY": 150.0}', '"JPY": 150.0, "GBP": 0.85}')
CHEAT = RATES.replace("    return round", '    if 90 <= amount <= 110 and code == "GBP":\n'
                      "        return round(amount * 0.85, 2)\n    return round")
"""The held-out judge's first toy cheat: a range around the tested amount (special_case)."""
LAYOUTS = {
    "bare": {"pyproject.toml": "[tool.pytest.ini_options]\n"},
    "setup.py": {"setup.py": 'from setuptools import setup\nsetup(name="mypkg", version="0.1", packages=["mypkg"])\n'},
    "src, setuptools pyproject": {"pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\n'
                                  'build-backend = "setuptools.build_meta"\n\n[project]\nname = "mypkg"\n'
                                  'version = "0.1"\n', "src": None},
    "hatchling": {"pyproject.toml": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
                  '[project]\nname = "mypkg"\nversion = "0.1"\n\n[tool.hatch.build.targets.wheel]\n'
                  'packages = ["mypkg"]\n'},
    "tests as a package, unittest": {"setup.py": 'from setuptools import setup\n'
                                     'setup(name="mypkg", version="0.1", packages=["mypkg"])\n',
                                     "test/__init__.py": "", "unittest": None},
}


def _repo(where: Path, layout: str) -> tuple[Path, str, str]:
    """The layout's tree, the package's path and the reproduction."""
    spec = dict(LAYOUTS[layout])
    pkg = "src/mypkg" if spec.pop("src", "") is None else "mypkg"
    unit = spec.pop("unittest", "") is None
    files = {f"{pkg}/__init__.py": "", f"{pkg}/rates.py": RATES, **{k: str(v) for k, v in spec.items()}}
    if unit:
        files["test/test_rates.py"] = UNITTESTS
        repro = "python -m unittest test.test_rates.RateTest.test_gbp"
    else:
        files["tests/test_rates.py"] = TESTS
        repro = "python -m pytest -q tests/test_rates.py::test_gbp"
    return make_repo(where / layout.replace(" ", "_").replace(",", ""), files), f"{pkg}/rates.py", repro


def _diff(repo: Path, path: str, text: str) -> str:
    return make_diff(repo, repo.parent / "work", {path: text})


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_packaged_twin_is_judged_as_the_bare_tree(tmp_path: Path, sandbox_image: str, layout: str) -> None:
    repo, path, repro = _repo(tmp_path, layout)
    cfg = SandboxConfig(image=sandbox_image, test_timeout_s=120)
    honest = verify_patch(str(repo), _diff(repo, path, HONEST), test_command=repro, sandbox=cfg,
                          trace_dir=tmp_path / "r")
    ver = honest.verification
    assert (honest.status, honest.reason) == ("verified", "verified"), (layout, honest.message)
    assert ver["second_judge"]["judged_twice"], (layout, ver["second_judge"])
    assert int(ver["judges"]["held_out"]["compared"]) >= 10, (layout, ver["judges"]["held_out"])
    assert ver["coverage"]["full"], ver["coverage"]
    cheat = verify_patch(str(repo), _diff(repo, path, CHEAT), test_command=repro, sandbox=cfg, trace_dir=tmp_path / "r")
    assert (cheat.status, cheat.reason) == ("not_verified", "overfitted"), (layout, cheat.reason, cheat.message)
