"""The repository's own `test` package is the one its tests import, under every runner and on every Python: the
standard library's `test` (its regression tests) used to win on 3.9, where the harness finds the repository
after the installed packages ("No module named 'test.test_utils'")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from patcher.config import SandboxConfig
from patcher.intake import stage_repo
from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest
from tests.support.helpers import make_repo

pytestmark = pytest.mark.docker

FILES = {
    "mylib/__init__.py": "def add(a, b):\n    return a - b\n",
    "test/__init__.py": "",
    "test/helpers.py": "ONE = 1\n",
    "test/test_utils.py": (
        "import unittest\n\nfrom mylib import add\nfrom test.helpers import ONE\n\n\n"
        "class TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(ONE, 2), 3)\n\n"
        "    def test_zero(self):\n        self.assertEqual(add(2, 0), 2)\n"),
}
COMMANDS = ("python -m pytest -q test/test_utils.py", "python -m unittest test.test_utils",
            "python -m unittest discover -s test -t .")


@pytest.mark.parametrize("python", ["default", "3.9"])
def test_the_repositorys_own_test_package_is_imported_by_every_runner(
        python: str, tmp_path: Path, sandbox_image: str, python_image: Callable[[str], str],
        docker_client: docker.DockerClient) -> None:
    image = sandbox_image if python == "default" else python_image(python)
    staged = stage_repo(str(make_repo(tmp_path / "repo", FILES)))
    try:
        with DockerSandbox(staged, SandboxConfig(image=image, test_timeout_s=120), docker_client) as box:
            outputs = {command: box.call(RunTestRequest(command)).output for command in COMMANDS}
    finally:
        staged.cleanup()
    for command, output in outputs.items():
        assert "No module named" not in output, (command, output)
        assert "AssertionError: -1 != 3" in output, (command, output)
    assert "1 failed, 1 passed" in outputs[COMMANDS[0]]
    assert "FAILED (failures=1)" in outputs[COMMANDS[1]] and "Ran 2 tests" in outputs[COMMANDS[1]]
