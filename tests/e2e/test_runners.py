"""A real Django project whose tests run with `manage.py test` (tests/data/envs/django_shop): Django installed
in its environment image from requirements.txt through the setup proxy, the crash taken from a real run in the
box, the baseline failing with it, the fix passing (reproduction, Django's whole suite as pass-to-pass, the
second judge's honest "judged once", so `unjudged`) and a wrong fix refused; the reproduction is the failing test
Django's own report names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from patcher.config import SandboxConfig
from patcher.env import EnvConfig, ensure_env_image
from patcher.intake import stage_repo
from patcher.pipeline import verify_patch
from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest
from tests.support.helpers import git, make_repo

pytestmark = [pytest.mark.docker]

PROJECT = Path(__file__).parents[1] / "data" / "envs" / "django_shop"
REPRO = "python manage.py test shop.tests.OrderTests.test_unit_price_of_an_empty_order"
CRASH = "return self.price_cents / self.quantity"
FIXED = "return self.price_cents / self.quantity if self.quantity else 0"
WRONG = "return self.price_cents // max(self.quantity, 1)"


def project_files() -> dict[str, str]:
    return {p.relative_to(PROJECT).as_posix(): p.read_text() for p in PROJECT.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def diff_of(repo: Path, new: str, tmp_path: Path) -> str:
    models = repo / "shop" / "models.py"
    before = models.read_text()
    models.write_text(before.replace(CRASH, new))
    try:
        return git(repo, "diff") + "\n"
    finally:
        models.write_text(before)


@pytest.fixture(scope="module")
def django_run(tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient,
               sandbox_image: str) -> Iterator[tuple[Path, str]]:
    """The project as a git repo, and Django's own output of its suite in the box (the user's crash report)."""
    repo = make_repo(tmp_path_factory.mktemp("django") / "shop", project_files())
    staged = stage_repo(str(repo))
    try:
        tag = ensure_env_image(staged, None, EnvConfig(base_image=sandbox_image), docker_client, print)
        config = SandboxConfig(image=tag, allowlist=[["python", "manage.py", "test"]])
        with DockerSandbox(staged, config, docker_client) as box:
            output = box.call(RunTestRequest("python manage.py test shop")).output
    finally:
        staged.cleanup()
    assert "ZeroDivisionError: division by zero" in output and CRASH in output, output
    yield repo, output


def test_a_django_fix_passes_with_manage_py_test_and_is_judged_once(django_run: tuple[Path, str], sandbox_image: str,
                                                       tmp_path: Path) -> None:
    repo, crash_report = django_run  # no --test: the reproduction is the test Django's report names
    result = verify_patch(str(repo), diff_of(repo, FIXED, tmp_path), traceback=crash_report,
                          sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=120), trace_dir=tmp_path)
    # the fix passes every test, but the second judge does not set Django up: judged once, so `unjudged`
    assert (result.status, result.reason) == ("unjudged", "unjudged"), result.message
    assert result.diff and any(m.startswith("second:") for m in result.verification["coverage"]["missing"])
    assert "Django set up" in result.message
    assert result.provenance is not None
    assert result.provenance["reproduction"] == {"command": REPRO, "source": "unittest_traceback"}
    ver = result.verification
    assert ver["reproduction"] == {"command": REPRO, "before": "failed", "after": "passed"}
    assert ver["fail_to_pass"] == ["shop.tests.OrderTests.test_unit_price_of_an_empty_order"]
    assert ver["pass_to_pass"] == {"total": 2, "regressions": [], "command": "python manage.py test"}
    assert [j["test"] for j in ver["second_judge"]["judged_once"]] == ver["fail_to_pass"]


def test_a_wrong_django_fix_is_refused(django_run: tuple[Path, str], sandbox_image: str,
                                                                tmp_path: Path) -> None:
    repo, crash_report = django_run
    result = verify_patch(str(repo), diff_of(repo, WRONG, tmp_path), test_command=REPRO, traceback=crash_report,
                          sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=120), trace_dir=tmp_path)
    assert (result.status, result.reason) == ("not_verified", "tests_failed"), result.message
