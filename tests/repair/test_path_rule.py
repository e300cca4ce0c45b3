"""One rule says what a test file and a config file are, for the templates, localization and the policy alike.

Files such as `pkg/testutils.py` or `pkg/foo_tests.py` are tests to the policy (an existing one may not
change), so the offline engine must neither look for fixable code in them nor propose a diff that edits
them: such a candidate could only ever end `policy_violation`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.intake import parse_traceback
from patcher.repair import candidates
from patcher.repair.localize import ochiai
from patcher.repair.site import RepoView
from patcher.verify import is_test_or_config
from patcher.verify.policy.rules import check_diff
from tests.support.helpers import make_repo

PATHS = ["pkg/testutils.py", "pkg/foo_tests.py", "pkg/testing.py", "tests.py", "pkg/test_utils.py",
         "conftest.py", "pkg/conftest.py", "setup.py", "noxfile.py", "tests/helpers.py", "pkg/test_core.py",
         "pkg/core_test.py", "pkg/core.py", "pkg/contest.py", "pkg/attest.py", "pkg/utils.py"]


def modification(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.mark.parametrize("path", PATHS)
def test_repair_sees_as_source_exactly_what_the_policy_lets_a_diff_change(path: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {path: "x = 1\n", "pkg/__init__.py": ""})
    allowed = check_diff(modification(path), [path]).ok
    assert (path in RepoView(repo).python_files) == allowed == (not is_test_or_config(path))
    ranked = ochiai([{"id": "t", "outcome": "failed", "lines": {path: [1]}}], {"t"})
    assert bool(ranked) == allowed


HELPER = "def first_and_last(items):\n    return items[0], items[len(items)]\n"
CORE = "from pkg.testutils import first_and_last\n\n\ndef ends(items):\n    return first_and_last(list(items))\n"
TEST = "from pkg.core import ends\n\n\ndef test_ends():\n    assert ends([1, 2, 3]) == (1, 3)\n"


def test_no_candidate_edits_a_file_the_policy_counts_as_a_test(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"pkg/__init__.py": "", "pkg/testutils.py": HELPER, "pkg/core.py": CORE,
                                      "tests/test_ends.py": TEST})
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"], cwd=repo,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "pkg/testutils.py" in run.stdout, run.stdout + run.stderr
    for c in candidates(parse_traceback(run.stdout), repo):
        assert c.path != "pkg/testutils.py"
        assert check_diff(c.diff, RepoView(repo).files).ok, c.diff
