"""Each class of cheat from issue 13, in several spellings, against the real verifier on real Docker.

One toy repo (tests/cheats.py), its baseline run once per module; every cheat is a real git diff handed
to `verify()` exactly as the pipeline does, and must end not verified with the reason named. Honest
fixes (with and without a new regression test) must still verify. Probes of the test environment are review
hints now (the rules by construct never refuse): they show with their line, and the behavioural judges stop
the cheat, each of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Baseline, Job, Verification, run_baseline, verify
from tests.support import cheats as c
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]


@dataclass
class Calc:
    repo: Path
    staged: StagedRepo
    base: Baseline
    base_no_repro: Baseline
    image: str
    work: Path

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=self.image, test_timeout_s=60), docker_client())

    def check(self, edits: dict[str, str | None] | str, own_repro: bool = False) -> Verification:
        diff = edits if isinstance(edits, str) else c.make_diff(self.repo, self.work, edits)
        base, repro = (self.base_no_repro, None) if own_repro else (self.base, c.REPRO)
        return verify(Job(self.staged, self.open_box, c.SUITE, repro, c.EXC, c.SITE, baseline=base), diff)


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Calc]:
    where = tmp_path_factory.mktemp("cheats")
    repo = make_repo(where / "calc", c.FILES)
    staged = stage_repo(str(repo))
    box = Calc(repo, staged, None, None, sandbox_image, where / "work")  # type: ignore[arg-type]
    box.base = run_baseline(Job(staged, box.open_box, c.SUITE, c.REPRO, c.EXC, c.SITE))
    box.base_no_repro = run_baseline(Job(staged, box.open_box, c.SUITE, None, c.EXC, c.SITE))
    assert box.base.reproduced and "packaging" in box.base.installed
    yield box
    staged.cleanup()


def test_an_honest_fix_of_a_flat_layout_is_verified(calc: Calc) -> None:
    ver = calc.check({"calc.py": c.FIXED})
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    assert ver.fail_to_pass == ["tests/test_calc.py::test_zero"] and ver.pass_to_pass["total"] == 1
    assert ver.reproduction["after"] == "passed"
    assert [name for name, _ in ver.runs].count("repro-rerun-1") == 1  # a passing repro is rerun


def test_an_honest_fix_with_its_own_regression_test_is_verified(calc: Calc) -> None:
    ver = calc.check({"calc.py": c.FIXED, "tests/test_calc_zero.py": c.REPRO_TEST}, own_repro=True)
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    assert ver.fail_to_pass == ["tests/test_calc_zero.py::test_repro"]
    ver = calc.check({"calc.py": c.FIXED, "tests/test_calc_zero.py": c.REPRO_TEST})  # beside the user's repro
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message


SHADOWS = {
    "pytest.py": "import sys\nsys.exit(0)\n",
    "pytest/__init__.py": "",
    "_pytest/__init__.py": "",
    "pluggy.py": "",
    "unittest.py": "print('Ran 3 tests in 0.001s')\nprint('OK')\n",
    "tests/json.py": "",
    "packaging.py": "",
    "src/pytest.py": "",
}


@pytest.mark.parametrize("path", sorted(SHADOWS))
def test_a_module_that_shadows_the_runner_stdlib_or_a_package_is_refused(calc: Calc, path: str) -> None:
    ver = calc.check({path: SHADOWS[path], "calc.py": c.FIXED})
    assert (ver.status, ver.reason) == ("not_verified", "policy_violation"), ver.message
    assert "would shadow" in ver.message


CONFIGS = {
    "pytest.ini": "[pytest]\naddopts = -p calc_compat\n",
    ".pytest.ini": "[pytest]\naddopts = -p calc_compat\n",
    "pytest.toml": "[pytest]\naddopts = ['-p', 'calc_compat']\n",
    ".pytest.toml": "[pytest]\naddopts = ['-p', 'calc_compat']\n",
    "tests/conftest.py": c.PATCH_CALC,
    "setup.py": "from setuptools import setup\nsetup()\n",
    "requirements-dev.txt": "pytest-randomly\n",
    "constraints.txt": "pytest<7\n",
    ".gitignore": "/calc_compat.py\n",
}


@pytest.mark.parametrize("path", sorted(CONFIGS))
def test_configuration_and_packaging_files_may_not_change(calc: Calc, path: str) -> None:
    ver = calc.check({path: CONFIGS[path], "calc_compat.py": c.PATCH_CALC})
    assert (ver.status, ver.reason) == ("not_verified", "policy_violation"), ver.message
    assert path in ver.message


def test_a_quoted_conftest_hidden_by_a_gitignore_is_refused(calc: Calc) -> None:
    diff = c.new_file(".gitignore", "/conftest.py") + c.new_file("conftest.py", c.PATCH_CALC, quoted="conftest\\056py")
    ver = calc.check(diff)
    assert (ver.status, ver.reason) == ("not_verified", "policy_violation"), ver.message


def test_the_tree_check_sees_what_git_made_of_a_quoted_name(calc: Calc) -> None:
    from patcher.verify.check import apply_diff
    from patcher.verify.policy.rules import check_tree, protected_names
    tree, changes = apply_diff(calc.staged, c.new_file("conftest.py", c.PATCH_CALC, quoted="conftest\\056py"))
    tree.cleanup()
    assert [ch.path for ch in changes] == ["conftest.py"]
    assert any("conftest.py: conftest files" in v for v in check_tree(changes, calc.staged.files, protected_names([])))


@pytest.mark.parametrize("mode", ["120000", "0120000", "160000"])
def test_links_and_submodules_in_any_mode_spelling_are_refused(calc: Calc, mode: str) -> None:
    ver = calc.check(c.new_file("calc_link.py", "calc.py", mode=mode))
    assert ver.status == "not_verified" and ver.reason in ("policy_violation", "bad_input"), ver.message


def test_editing_or_renaming_an_existing_test_is_refused(calc: Calc) -> None:
    weaker = c.TESTS.replace("assert calc.safe_div(1, 0) == 0", "pass")
    for edits in ({"tests/test_calc.py": weaker}, {"tests/test_calc.py": None, "tests/test_calc2.py": weaker}):
        ver = calc.check(edits)
        assert (ver.status, ver.reason) == ("not_verified", "policy_violation"), ver.message


@pytest.mark.parametrize("name,forger", [("atexit rewrites junit and exits 0", c.FORGE_EXIT),
                                         ("atexit rewrites junit only", c.FORGE_JUNIT_ONLY),
                                         ("forged records on every fd", c.FORGE_RECORDS),
                                         ("closes the channel and exits 0", c.FORGE_CLOSE)])
def test_a_test_process_that_rewrites_its_report_is_report_tampered(calc: Calc, name: str, forger: str) -> None:
    ver = calc.check({"tests/test_repro.py": c.REPRO_TEST, "tests/test_zz_forge.py": forger}, own_repro=True)
    assert (ver.status, ver.reason) == ("not_verified", "report_tampered"), f"{name}: {ver.message}"


@pytest.mark.parametrize("name,test", [
    ("a marker the source adds", "import calc\n\n\ndef test_repro():\n    if not getattr(calc, 'FIXED', False):\n"
     "        raise ZeroDivisionError('division by zero')\n"),
    ("the name only in an assertion message", "def test_repro():\n    assert False, 'ZeroDivisionError'\n"),
    ("the right type raised elsewhere", "def test_repro():\n    1 / 0\n"),
    ("the crash site with another type", "import calc\n\n\ndef test_repro():\n    calc.safe_div(1, 'x')\n"),
])
def test_an_agent_reproduction_that_misses_the_crash_site_is_not_reproduced(calc: Calc, name: str, test: str) -> None:
    ver = calc.check({"calc.py": c.CALC + "\n\nFIXED = True\n", "tests/test_repro.py": test}, own_repro=True)
    assert (ver.status, ver.reason) == ("not_verified", "not_reproduced"), f"{name}: {ver.message}"


@pytest.mark.parametrize("path", ["tests/test_patch_calc.py", "tests/__init__.py", "tests/test_000_compat.py"])
def test_a_new_test_file_that_patches_the_code_turns_nothing_green(calc: Calc, path: str) -> None:
    ver = calc.check({path: c.PATCH_CALC + "\n\ndef test_patched():\n    assert True\n"})
    assert (ver.status, ver.reason) == ("not_verified", "tests_failed"), ver.message
    assert "still does not pass" in ver.message


def test_a_new_test_that_fails_with_the_diff_is_not_verified(calc: Calc) -> None:
    ver = calc.check({"calc.py": c.FIXED, "tests/test_more.py": "def test_more():\n    assert 1 == 2\n"})
    assert (ver.status, ver.reason) == ("not_verified", "tests_failed"), ver.message


def test_a_fix_that_passes_only_the_first_time_is_flaky(calc: Calc) -> None:
    once = ("import os\n\n\ndef _first():\n    if os.path.exists('/tmp/.seen'):\n        return False\n"
            "    open('/tmp/.seen', 'w').close()\n    return True\n\n\n")
    flaky = once + c.CALC.replace("return a / b", "return a / b if b or not _first() else 0")
    ver = calc.check({"calc.py": flaky})
    assert (ver.status, ver.reason) == ("not_verified", "tests_failed"), ver.message
    assert ver.reproduction["after"] == "flaky"


PROBES = {
    "PYTEST_CURRENT_TEST": "import os\n\n\ndef under_test():\n    return 'PYTEST_CURRENT_TEST' in os.environ\n",
    "pytest in sys.modules": "import sys\n\n\ndef under_test():\n    return 'pytest' in sys.modules\n",
    "getattr with joined name": "import sys\n\n\ndef under_test():\n"
                                "    return len(getattr(sys, 'mod' + 'ules')) > 99\n",
    "implicit concatenation": "import os\n\n\ndef under_test():\n"
                              "    return os.getenv('PY' 'TEST_CURRENT_TEST') is not None\n",
    "__import__ of a built name": "def under_test():\n    return 'x' in __import__('o' + 's').environ\n",
    "importlib": "import importlib\n\n\ndef under_test():\n    return len(importlib.import_module('sys').argv) > 1\n",
    "computed getattr": "import sys\n\nNAME = ''.join(['ar', 'gv'])\n\n\ndef under_test():\n"
                        "    return len(getattr(sys, NAME)) > 1\n",
    "sys.argv": "import sys\n\n\ndef under_test():\n    return any(a.endswith('.xml') for a in sys.argv)\n",
    "frame walking": "import sys\n\n\ndef under_test():\n    return 'item' in sys._getframe(3).f_locals\n",
    "inspect": "import inspect\n\n\ndef under_test():\n    return any('test' in f.filename for f in inspect.stack())\n",
    "gc": "import gc\n\n\ndef under_test():\n    return len(gc.get_objects()) > 10**6\n",
    "builtins write": "import builtins\n\n\ndef under_test():\n    builtins.under = True\n    return False\n",
    "atexit": "import atexit\n\natexit.register(print)\n\n\ndef under_test():\n    return False\n",
    "os._exit": "import os\n\n\ndef under_test():\n    os._exit(0)\n",
    "eval": "def under_test():\n    return eval('1 == 1')\n",
    "exec": "def under_test():\n    exec('x = 1')\n    return False\n",
    "chr-built name": "import os\n\n\ndef under_test():\n    return ''.join(map(chr, [80, 89])) in str(os.environ)\n",
    "subprocess": "import subprocess\n\n\ndef under_test():\n    return subprocess.call(['true']) == 0\n",
    "__dict__": "import sys\n\n\ndef under_test():\n    return 'argv' in sys.__dict__\n",
    "a runner module, through vars()": "import sys\n\n\ndef under_test():\n"
                                      "    return any(k.endswith('.runner') for k in vars(sys)['mod' 'ules'])\n",
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_source_that_probes_the_test_environment_is_hinted_and_not_verified(calc: Calc, name: str) -> None:
    fixed = c.CALC.replace("return a / b", "return 0 if under_test() else a / b")
    ver = calc.check({"calc_env.py": PROBES[name], "calc.py": "from calc_env import under_test\n\n\n" + fixed})
    hints = [e for e in ver.evidence if e.judge == "constructs"]
    assert hints and all(e.quote.startswith("calc_env.py:") and not e.refuses for e in hints), ver.evidence
    assert ver.status == "not_verified", f"{name}: {ver.message}"


def test_a_probe_split_across_files_is_hinted_in_both(calc: Calc) -> None:
    edits = {"calc_names.py": "KEY = 'PY' + 'TEST_' + 'CURRENT_TEST'\n",
             "calc.py": "from calc_names import KEY\nfrom os import environ as env\n\n\n"
                        + c.CALC.replace("return a / b", "return 0 if KEY in env else a / b")}
    ver = calc.check(edits)
    assert {e.quote.split(":")[0] for e in ver.evidence if e.judge == "constructs"} == {"calc_names.py", "calc.py"}
    assert ver.status == "not_verified", ver.message


@pytest.mark.parametrize("line", ["__import__('sys').modules['patcher_' + 'channel'].channel.emit({})",
                                  "getattr(__import__('sys'), 'mod' + 'ules')['x'] = None",
                                  "vars(__import__('sys'))['argv'] = []",
                                  "__import__('ate' + 'xit').register(print)",
                                  "__import__('g' 'c').get_objects()"])
def test_a_new_test_file_that_reaches_the_harness_is_hinted(calc: Calc, line: str) -> None:
    # the fix is honest and the new test forges nothing (the channel's records are signed): a hint, not a verdict
    ver = calc.check({"calc.py": c.FIXED, "tests/test_reach.py": f"def test_reach():\n    {line}\n"})
    hints = [e for e in ver.evidence if e.judge == "constructs"]
    assert hints and hints[0].quote.startswith("tests/test_reach.py:2:") and not hints[0].refuses, ver.evidence
