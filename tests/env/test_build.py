"""Environment images on real Docker, installing from the real package index through the host's pip settings.

The fixture repo (tests/data/envs/clock) needs freezegun, uses a src/ layout and has an off-by-one bug
at noon; its tests are named check_*.py so that patcher's own test run does not collect them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from patcher.config import SandboxConfig
from patcher.env import EnvConfig, ensure_env_image, list_env_images, prune, table
from patcher.env.plan import SETUP_DIR, detect, env_key, setup_script
from patcher.errors import SetupFailed
from patcher.intake import StagedRepo
from patcher.pipeline import JobSpec, run_job
from patcher.sandbox import OWNER, DockerSandbox, owner_labels
from patcher.testing import ScriptedModelServer, reply
from sandbox.protocol import EditFileRequest, RunTestRequest
from tests.support.envs import BUG, FIXED, TEST_REPOSITORY, clock_files, remove_test_images, staged_repo
from tests.support.helpers import make_repo


@pytest.fixture(scope="module")
def env_config(tmp_path_factory: pytest.TempPathFactory) -> EnvConfig:
    return EnvConfig(repository=TEST_REPOSITORY, home=tmp_path_factory.mktemp("home"), setup_timeout_s=300)


@pytest.fixture(scope="module")
def clock(tmp_path_factory: pytest.TempPathFactory, docker_client: docker.DockerClient, sandbox_image: str,
          env_config: EnvConfig) -> Iterator[tuple[StagedRepo, str, float]]:
    """The clock repo staged and its environment image built cold: (staged, tag, build seconds)."""
    remove_test_images(docker_client, env_config)
    staged = staged_repo(tmp_path_factory.mktemp("clock") / "clock", clock_files())
    started = time.monotonic()
    tag = ensure_env_image(staged, None, env_config, docker_client, print)
    yield staged, tag, time.monotonic() - started
    staged.cleanup()
    remove_test_images(docker_client, env_config)


# --- detection and keys (no Docker) -------------------------------------------------------------------------

def test_nothing_to_install_is_no_plan(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    (tmp_path / "src").mkdir()
    assert detect(tmp_path, None, ["test"]) is None
    assert detect(tmp_path, "pip install attrs", ["test"]) is not None


def test_a_flat_project_without_dependencies_needs_no_image(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "flat"\nversion = "0.1"\n')
    assert detect(tmp_path, None, ["test"]) is None  # imports from the repo root as it is
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "flat"\nversion = "0.1"\ndependencies = ["six"]\n')
    assert detect(tmp_path, None, ["test"]) is not None


def test_detects_requirements_extras_groups_and_src_layout(tmp_path: Path) -> None:
    make_repo(tmp_path, {
        "pyproject.toml": "[project]\nname = 'x'\nversion = '1'\n[project.optional-dependencies]\n"
                          "test = ['pytest']\ndocs = ['sphinx']\n[dependency-groups]\ndev = ['attrs']\n",
        "requirements.txt": "freezegun\n", "requirements-dev.txt": "attrs\n", "src/x/__init__.py": ""})
    plan = detect(tmp_path, None, ["test", "tests", "testing", "dev"])
    assert plan is not None
    assert plan.requirements == ["requirements.txt", "requirements-dev.txt"]
    assert (plan.installable, plan.extras, plan.src_layout) == (True, ["test"], True)
    assert plan.loose == [("attrs", "pyproject.toml [dependency-groups] dev")]
    script = setup_script(plan)
    assert ("-r requirements.txt -r requirements-dev.txt -r /workspace/.patcher-setup/test-requirements.txt "
            "-e '.[test]'") in script
    assert "_patcher_repo_src.pth" not in script  # the editable install makes src/ importable
    assert script.rstrip().endswith("rm -rf /workspace/repo /workspace/.patcher-setup")


def test_setup_cfg_extras_and_a_bare_src_layout(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n[options.extras_require]\ntesting = pytest\n")
    assert detect(tmp_path, None, ["test", "testing"]) is None  # pip installs no project without setup.py or pyproject
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    plan = detect(tmp_path, None, ["test", "testing"])
    assert plan is not None and plan.installable and plan.extras == ["testing"]
    bare = tmp_path / "bare"
    make_repo(bare, {"requirements-test.txt": "freezegun\n", "src/y/__init__.py": ""})
    plan = detect(bare, None, ["test"])
    assert plan is not None and not plan.installable
    assert "echo /workspace/repo/src" in setup_script(plan)


def test_key_changes_with_requirements_setup_command_and_base(tmp_path: Path) -> None:
    make_repo(tmp_path, {"requirements.txt": "freezegun==1.5.5\n", "app.py": ""})
    plan = detect(tmp_path, None, [])
    assert plan is not None
    key = env_key(plan, "sha256:base")
    (tmp_path / "app.py").write_text("print('code is not a dependency')\n")
    same = detect(tmp_path, None, [])
    assert same is not None and env_key(same, "sha256:base") == key
    (tmp_path / "requirements.txt").write_text("freezegun==1.5.4\n")
    changed = detect(tmp_path, None, [])
    assert changed is not None and env_key(changed, "sha256:base") != key
    with_setup = detect(tmp_path, "pip install attrs", [])
    assert with_setup is not None and env_key(with_setup, "sha256:base", "c1") != env_key(changed, "sha256:base")
    assert env_key(changed, "sha256:other") != env_key(changed, "sha256:base")


@pytest.mark.parametrize(("requirements", "reads"), [
    ("freezegun==1.5.5\nattrs  # pinned elsewhere\n", False), ("-r requirements-dev.txt\n", False),
    ("-e .\n", True), ("./vendor/pkg\n", True), ("pkg @ file:///workspace/repo/pkg\n", True),
    ("-r ../other.txt\n", True), ("--find-links ./wheels\nx\n", True), ("-c constraints.txt\n", True),
    ("--index-url file:///workspace/repo/idx\n", True), ("--index-url https://pypi.org/simple\nx\n", False),
])
def test_a_setup_that_reads_the_repo_keys_on_its_content(tmp_path: Path, requirements: str, reads: bool) -> None:
    make_repo(tmp_path, {"requirements.txt": requirements, "requirements-dev.txt": "attrs\n", "app.py": ""})
    plan = detect(tmp_path, None, [])
    assert plan is not None and plan.reads_repo is reads
    assert (env_key(plan, "sha256:base", "content-1") != env_key(plan, "sha256:base", "content-2")) is reads
    installable = detect(tmp_path, "pip install attrs", [])
    assert installable is not None and installable.reads_repo
    with pytest.raises(ValueError):
        env_key(installable, "sha256:base")


# --- real Docker, real index --------------------------------------------------------------------------------

@pytest.mark.docker
def test_src_layout_repo_runs_its_tests_offline_from_the_env_image(
        clock: tuple[StagedRepo, str, float], docker_client: docker.DockerClient) -> None:
    staged, tag, built_s = clock
    print(f"cold build {built_s:.1f} s")
    assert tag.startswith(f"{TEST_REPOSITORY}:") and len(tag.split(":")[1]) == 12
    with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
        box.container.reload()  # the box is created without the SDK's inspect: read Docker's own view
        assert box.container.attrs["HostConfig"]["NetworkMode"] == "none"
        before = box.call(RunTestRequest("python -m pytest -q"))
        assert before.exit_code == 1 and "1 failed, 2 passed" in before.output, before.output
        assert "AssertionError" in before.output and "ModuleNotFoundError" not in before.output
        # The repo is installed editable at /workspace/repo: the agent's edit is what the tests import.
        edit = box.call(EditFileRequest("src/clock/__init__.py", BUG, FIXED))
        assert not edit.is_error, edit.output
        after = box.call(RunTestRequest("python -m pytest -q"))
        assert after.exit_code == 0 and "3 passed" in after.output, after.output
        leftovers = box.call(RunTestRequest("python -c \"import os; print(sorted(os.listdir('/workspace')))\""))
        assert "['repo']" in leftovers.output  # the setup copy and pip settings were not committed
        offline = box.call(RunTestRequest(
            "python -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=3)\""))
        assert offline.exit_code != 0


SHADOWED = {  # a flat setuptools project whose package is also in the image (Debian's, a pytest dependency)
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "more-itertools"\nversion = "99"\ndependencies = []\n'
                      '[tool.setuptools]\npackages = ["more_itertools"]\n',
    "setup.py": "from setuptools import setup\nsetup()\n",  # a project with no dependencies needs no environment
    "more_itertools/__init__.py": "THIS_REPO = True\n",
    "tests/check_shadow.py": "import more_itertools\n\ndef test_it():\n    assert more_itertools.THIS_REPO\n"}


@pytest.mark.docker
def test_the_editable_project_is_imported_ahead_of_the_images_package_of_its_name(
        docker_client: docker.DockerClient, sandbox_image: str, env_config: EnvConfig, tmp_path: Path) -> None:
    """setuptools' editable finder comes after the image's site-packages (Debian's more_itertools 4 was what
    more-itertools 8's own tests imported); editable.py puts the project's directory ahead of them."""
    staged = staged_repo(tmp_path / "shadowed", SHADOWED)
    try:
        tag = ensure_env_image(staged, None, env_config, docker_client, print)
        with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
            run = box.call(RunTestRequest("python -m pytest -q tests/check_shadow.py"))
        assert run.exit_code == 0 and "1 passed" in run.output, run.output
    finally:
        staged.cleanup()


@pytest.mark.docker
def test_the_same_content_reuses_the_image_and_other_code_gets_its_own(
        clock: tuple[StagedRepo, str, float], docker_client: docker.DockerClient, env_config: EnvConfig,
        tmp_path: Path) -> None:
    _, tag, built_s = clock
    image_id = docker_client.images.get(tag).id
    again = staged_repo(tmp_path / "clock", clock_files())
    logged: list[str] = []
    started = time.monotonic()
    assert ensure_env_image(again, None, env_config, docker_client, logged.append) == tag
    warm_s = time.monotonic() - started
    print(f"cold {built_s:.2f} s, warm {warm_s:.3f} s")
    assert logged == [] and warm_s < 1.0 < built_s
    assert docker_client.images.get(tag).id == image_id
    listed = {e.tag: e for e in list_env_images(docker_client, env_config)}
    assert listed[tag].inputs["files"] == ["pyproject.toml"] and listed[tag].inputs["extras"] == ["test"]
    assert listed[tag].inputs["repo"] == again.base_commit[:12], "the project's build code read the repo"
    assert listed[tag].last_used is not None and listed[tag].size > 0
    line = next(row for row in table(list(listed.values())).splitlines() if row.startswith(tag))
    assert "pyproject.toml" in line and " MB " in line  # `patcher image ls`
    # The same dependency files with other code: the project's build code ran on this repo, so no reuse.
    other = staged_repo(tmp_path / "other", clock_files() | {"src/clock/extra.py": "x = 1\n"})
    plan, base_id = detect(other.path, None, env_config.extras), docker_client.images.get(env_config.base_image).id
    assert plan is not None and plan.reads_repo
    assert env_key(plan, base_id, again.base_commit)[:12] == tag.split(":")[1]
    assert env_key(plan, base_id, other.base_commit)[:12] != tag.split(":")[1]


POISON_SETUP = 'from setuptools import setup\nexec(open("pkg/version.py").read())\n' \
               'setup(name="pkg", version=VERSION, packages=["pkg"])\n'
POISON = ('VERSION = "1.0"\nimport sysconfig\n'
          'open(sysconfig.get_paths()["purelib"] + "/zz_poison.pth", "w").write('
          '"import os; open(\'/tmp/poisoned\', \'w\').close()\\n")\n')
PROBE = "python -c \"import os; print('poisoned' if os.path.exists('/tmp/poisoned') else 'clean')\""


@pytest.mark.docker
def test_a_setup_py_that_poisons_its_environment_reaches_no_other_repository(
        docker_client: docker.DockerClient, env_config: EnvConfig, sandbox_image: str, tmp_path: Path) -> None:
    """Two repositories with the same dependency files (setup.py); one's build code drops a .pth into the
    environment. The other must get an image of its own, without it."""
    hostile = staged_repo(tmp_path / "hostile", {"setup.py": POISON_SETUP, "pkg/__init__.py": "",
                                                 "pkg/version.py": POISON})
    clean = staged_repo(tmp_path / "clean", {"setup.py": POISON_SETUP, "pkg/__init__.py": "",
                                             "pkg/version.py": 'VERSION = "1.0"\n'})
    try:
        poisoned_tag = ensure_env_image(hostile, None, env_config, docker_client, print)
        clean_tag = ensure_env_image(clean, None, env_config, docker_client, print)
        assert clean_tag != poisoned_tag
        for staged, tag, expected in ((hostile, poisoned_tag, "poisoned"), (clean, clean_tag, "clean")):
            with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
                probe = box.call(RunTestRequest(PROBE))
                assert probe.output.strip().splitlines()[-1] == expected, (tag, probe.output)
    finally:
        hostile.cleanup()
        clean.cleanup()


@pytest.mark.docker
def test_changing_requirements_builds_a_new_tag(
        clock: tuple[StagedRepo, str, float], docker_client: docker.DockerClient, env_config: EnvConfig,
        tmp_path: Path) -> None:
    _, tag, _ = clock
    files = clock_files()
    files["pyproject.toml"] = files["pyproject.toml"].replace('"freezegun>=1.2"', '"freezegun>=1.2", "six"')
    staged = staged_repo(tmp_path / "clock", files)
    new = ensure_env_image(staged, None, env_config, docker_client, print)
    assert new != tag and new.startswith(f"{TEST_REPOSITORY}:")
    with DockerSandbox(staged, SandboxConfig(image=new), docker_client) as box:
        assert box.call(RunTestRequest("python -c \"import six, freezegun\"")).exit_code == 0


@pytest.mark.docker
def test_a_failing_setup_raises_setup_failed_with_the_installers_last_lines(
        docker_client: docker.DockerClient, sandbox_image: str, env_config: EnvConfig, tmp_path: Path) -> None:
    staged = staged_repo(tmp_path / "bad", {"requirements.txt": "patcher-no-such-package-zq9==1.0\n", "a.py": ""})
    with pytest.raises(SetupFailed) as caught:
        ensure_env_image(staged, None, env_config, docker_client, print)
    error = caught.value
    assert (error.exit_code, error.reason) == (3, "setup_failed")
    assert "exit code 1" in str(error)
    assert "No matching distribution found for patcher-no-such-package-zq9==1.0" in str(error), str(error)
    setups = [c for c in docker_client.containers.list(all=True, filters={"label": f"{OWNER}={owner_labels()[OWNER]}"})
              if SETUP_DIR in " ".join(c.attrs["Config"]["Cmd"] or [])]
    assert setups == []  # the setup container was removed (other processes' containers are not ours to judge)
    assert all("patcher-no-such" not in str(e.inputs) for e in list_env_images(docker_client, env_config))


@pytest.mark.docker
def test_prune_by_size_evicts_the_least_recently_used(
        docker_client: docker.DockerClient, sandbox_image: str, tmp_path: Path) -> None:
    config = EnvConfig(repository=f"{TEST_REPOSITORY}-lru", home=tmp_path / "home", max_gb=100)
    prune(docker_client, config, remove_all=True)
    staged = staged_repo(tmp_path / "r", {"a.py": ""})
    tags = {}
    try:
        for name in ("a", "b", "c"):  # network-free setups: each writes 4 MB of its own
            setup = f"head -c 4000000 /dev/urandom > /opt/patcher-env/blob-{name}"
            tags[name] = ensure_env_image(staged, setup, config, docker_client, print)
        ensure_env_image(staged, "head -c 4000000 /dev/urandom > /opt/patcher-env/blob-a", config,
                         docker_client, print)  # a is used again: b is now the least recently used
        sizes = {e.tag: e.size for e in list_env_images(docker_client, config)}
        assert [e.tag for e in list_env_images(docker_client, config)] == [tags["b"], tags["c"], tags["a"]]
        assert all(4_000_000 <= s < 8_000_000 for s in sizes.values()), sizes
        cap = (sizes[tags["a"]] + sizes[tags["c"]] + 1000) / 1e9
        assert prune(docker_client, config, max_gb=cap) == [], "built a moment ago: a concurrent job may use it"
        assert prune(docker_client, config, max_gb=cap, in_use_s=0) == [tags["b"]]
        assert {e.tag for e in list_env_images(docker_client, config)} == {tags["a"], tags["c"]}
        assert prune(docker_client, config, max_gb=cap, in_use_s=0) == []
    finally:
        prune(docker_client, config, remove_all=True)
        staged.cleanup()
    assert list_env_images(docker_client, config) == []


@pytest.mark.docker
def test_a_job_on_the_env_image_goes_to_verified(
        clock: tuple[StagedRepo, str, float], docker_client: docker.DockerClient, tmp_path: Path) -> None:
    staged, tag, _ = clock
    with DockerSandbox(staged, SandboxConfig(image=tag), docker_client) as box:
        traceback = box.call(RunTestRequest("python -m pytest -q")).output  # the real failure, from the box
    repo = make_repo(tmp_path / "clock", clock_files())
    steps = [reply(None, [("edit_file", {"path": "src/clock/__init__.py", "old_text": BUG, "new_text": FIXED})]),
             reply("Noon is afternoon.")]
    with ScriptedModelServer(steps) as server:
        spec = JobSpec(repo=str(repo), traceback=traceback, model=server.model_config(),
                       sandbox=SandboxConfig(image=tag, test_timeout_s=60), trace_dir=tmp_path / "runs")
        result = run_job(spec)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.verification["fail_to_pass"] == ["tests/check_clock.py::test_half_past_noon"]
    assert result.verification["pass_to_pass"] == {"total": 2, "regressions": [], "command": "python -m pytest -q"}
    assert result.diff and f"+    return \"good morning\" if {FIXED} else" in result.diff
