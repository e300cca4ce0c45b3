"""`[tool.patcher]` in the base tree's pyproject.toml: defaults a team writes once; flags win."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import DEFAULT_SUITE, SandboxConfig
from patcher.errors import BadInput
from patcher.intake import effective
from patcher.intake.repoconfig import read_repo_settings
from patcher.pipeline import JobSpec, run_job, verify_patch
from patcher.testing import ScriptedModelServer, reply
from tests.support.example import FILES, FIX, PRODUCTION_TB
from tests.support.helpers import make_repo

TABLE = """[tool.patcher]
test = "python -m pytest -q tests/test_pagination.py::test_last_page"
suite = "python -m pytest -q tests/test_pagination.py"
setup = "true"
allowlist = ["python -m shop.selfcheck --fast", "make check"]
"""


def write(tree: Path, text: str) -> Path:
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "pyproject.toml").write_text(text)
    return tree


def test_the_table_fills_what_no_flag_sets(tmp_path: Path) -> None:
    got = effective(write(tmp_path, TABLE), None, None, None, SandboxConfig(allowlist=[["tox", "-e"]]))
    assert got.test_command == "python -m pytest -q tests/test_pagination.py::test_last_page"
    assert got.suite_command == "python -m pytest -q tests/test_pagination.py"
    assert got.setup == "true"
    assert got.sandbox.allowlist == [["tox", "-e"], ["python", "-m", "shop.selfcheck", "--fast"], ["make", "check"]]
    assert got.sources == {"test": "pyproject", "suite": "pyproject", "setup": "pyproject", "python": "default"}
    assert got.python is None


def test_the_python_key_and_the_flag_over_it(tmp_path: Path) -> None:
    write(tmp_path, '[tool.patcher]\npython = "3.9"\n')
    got = effective(tmp_path, None, None, None, SandboxConfig())
    assert (got.python, got.sources["python"]) == ("3.9", "pyproject")
    got = effective(tmp_path, None, None, None, SandboxConfig(), "3.13")
    assert (got.python, got.sources["python"]) == ("3.13", "flag")


def test_flags_win_over_the_table(tmp_path: Path) -> None:
    got = effective(write(tmp_path, TABLE), "pytest -q t.py", "pytest -q", "pip install .", SandboxConfig(), "3.9")
    assert (got.test_command, got.suite_command, got.setup) == ("pytest -q t.py", "pytest -q", "pip install .")
    assert set(got.sources.values()) == {"flag"}


@pytest.mark.parametrize("text", ["", "[project]\nname = 'x'\n", "not toml [[[", "tool = 3\n"])
def test_no_table_means_the_defaults(tmp_path: Path, text: str) -> None:
    got = effective(write(tmp_path, text), None, None, None, SandboxConfig())
    assert (got.test_command, got.suite_command, got.setup, got.sandbox.allowlist) == (None, DEFAULT_SUITE, None, [])


def test_a_pyproject_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere", TABLE)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "pyproject.toml").symlink_to(tmp_path / "elsewhere" / "pyproject.toml")
    assert read_repo_settings(tmp_path / "repo").suite is None


@pytest.mark.parametrize("table,needle", [
    ("[tool.patcher]\nsuite = 3\n", "suite: Input should be a valid string"),
    ("[tool.patcher]\ntests = 'pytest'\n", "tests: Extra inputs are not permitted"),
    ("[tool.patcher]\nallowlist = ['make \"check']\n", "does not parse"),
    ("[tool]\npatcher = 3\n", "table: Input should be a valid dictionary"),
    ("[tool.patcher]\npython = '3'\n", "python: String should match pattern"),
    ("[tool.patcher]\npython = 3.9\n", "python: Input should be a valid string"),
])
def test_a_wrong_table_is_bad_input_naming_the_key(tmp_path: Path, table: str, needle: str) -> None:
    with pytest.raises(BadInput, match=needle):
        effective(write(tmp_path, table), None, None, None, SandboxConfig())


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_a_job_and_verify_run_what_the_table_says_and_flags_win(tmp_path: Path) -> None:
    files = {**FILES, "tests/test_other.py": "def test_unrelated():\n    assert False\n",
             "pyproject.toml": TABLE.replace('setup = "true"\n', "")}
    repo = make_repo(tmp_path / "shop", files)
    with ScriptedModelServer([reply(None, [FIX]), reply("done")]) as server:
        spec = JobSpec(repo=str(repo), traceback=PRODUCTION_TB, model=server.model_config(), engine="agent",
                       trace_dir=tmp_path / "runs")
        result = run_job(spec)
    # The table's suite leaves out tests/test_other.py, which fails on the base: the default suite would too.
    assert result.status == "verified", result.message
    ver = result.verification
    assert ver["reproduction"]["command"] == "python -m pytest -q tests/test_pagination.py::test_last_page"
    assert ver["pass_to_pass"]["command"] == "python -m pytest -q tests/test_pagination.py"
    assert result.diff is not None
    again = verify_patch(str(repo), result.diff, trace_dir=tmp_path / "runs")  # test from the table
    assert again.status == "verified", again.message
    flagged = verify_patch(str(repo), result.diff, suite_command="python -m pytest -q tests", trace_dir=tmp_path)
    assert flagged.verification["pass_to_pass"]["command"] == "python -m pytest -q tests"
