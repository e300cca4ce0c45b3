"""Done-when of issue 24: `patcher fix` on a private remote (git http-backend behind a token) whose
requirement comes from a private index (basic auth), installed by real pip in the setup container through
the host's proxy, verifies end to end; a test inside the box looks for the secrets everywhere it can, and
every output of the job (stdout, stderr, JSON, trace, PATCHER_HOME) is grepped for them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from .helpers import git, make_repo
from .private_servers import (
    GitHandler,
    IndexHandler,
    basic,
    build_wheel,
    outward_address,
    serving,
    serving_tls,
    tls_files,
    url_of,
)

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "zqxv" + "-"
TOKEN, PASSWORD = PREFIX + os.urandom(10).hex(), PREFIX + os.urandom(10).hex()
LOOK = """\
import os
from pathlib import Path

NEEDLE = ("zq" + "xv-").encode()


def _files():
    for top in ("/workspace", "/tmp", "/opt", "/etc", "/home", "/root", "/run", "/var"):
        for dirpath, _, names in os.walk(top):
            for name in names:
                yield Path(dirpath) / name
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            yield from (proc / "environ", proc / "cmdline")


def test_no_secret_of_the_service_is_in_the_box():
    assert not [v for v in os.environ.values() if NEEDLE in v.encode()]
    found = []
    for path in _files():
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 20_000_000:
                if NEEDLE in path.read_bytes():
                    found.append(str(path))
        except OSError:
            pass
    assert found == []


def test_the_private_dependency_is_installed():
    import private_dep

    assert private_dep.SIZE == 10
"""


@pytest.mark.docker
def test_a_private_remote_with_a_private_index_dependency_verifies_and_leaks_nothing(
        tmp_path: Path, docker_client: docker.DockerClient, sandbox_image: str) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "private-dep", "1.0", "SIZE = 10\n")
    src = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", src)
    (src / "requirements.txt").write_text("private-dep==1.0\n")
    (src / "tests" / "test_box.py").write_text(LOOK)
    make_repo(src, {})
    git(tmp_path, "clone", "-q", "--bare", str(src), str(tmp_path / "srv" / "shop.git"))
    token_file = tmp_path / "git-tokens"
    with serving(GitHandler, root=str(tmp_path / "srv"), auth=basic("ci", TOKEN)) as remote, \
            serving(IndexHandler, host=outward_address(), root=str(wheels), auth=basic("ci", PASSWORD)) as index:
        token_file.write_text(f"{url_of(remote)} ci:{TOKEN}\n")
        token_file.chmod(0o600)
        index_url = url_of(index, "/simple").replace("http://", f"http://ci:{PASSWORD}@")
        home = tmp_path / "home"
        env = {**os.environ, "PATCHER_SANDBOX_IMAGE": sandbox_image, "PATCHER_HOME": str(home),
               "PATCHER_GIT_TOKENS_FILE": str(token_file), "PIP_INDEX_URL": index_url,
               "PIP_TRUSTED_HOST": str(index.server_address[0]), "PIP_EXTRA_INDEX_URL": ""}
        argv = [str(Path(sys.executable).parent / "patcher"), "fix", url_of(remote, "/shop.git"), "--traceback",
                str(ROOT / "examples" / "shop.traceback.txt"), "--engine", "offline", "--test",
                "python -m pytest -q tests/test_pagination.py", "--json"]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    result = json.loads(out.stdout)
    assert result["status"] == "verified", (result["message"], out.stderr[-3000:])
    assert result["files_changed"] == ["shop/pagination.py"]
    assert basic("ci", PASSWORD) in index.seen and basic("ci", TOKEN) in remote.seen
    trace = Path(result["trace"]).read_text()
    suite = next(json.loads(line) for line in trace.splitlines() if '"base-suite"' in line)
    # Only the crash fails on the base: the box test and the dependency test ran and passed.
    assert suite["failed"] == ["tests/test_pagination.py::test_last_page"] and suite["passed"] >= 4, suite
    everything = out.stdout + out.stderr + "".join(
        p.read_text(errors="replace") for p in home.rglob("*") if p.is_file())
    assert PREFIX not in everything, "a secret is in an output of the job"


@pytest.mark.docker
def test_an_index_refusing_the_credentials_is_setup_failed_with_the_redacted_tail(
        tmp_path: Path, docker_client: docker.DockerClient, sandbox_image: str) -> None:
    from patcher.env import EnvConfig, ensure_env_image
    from patcher.errors import SetupFailed
    from patcher.intake import stage_repo

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "private-dep", "1.0", "SIZE = 10\n")
    repo = make_repo(tmp_path / "r", {"requirements.txt": "private-dep==1.0\n", "a.py": ""})
    staged = stage_repo(str(repo))
    with serving(IndexHandler, host=outward_address(), root=str(wheels), auth=basic("ci", PASSWORD)) as index:
        wrong = url_of(index, "/simple").replace("http://", f"http://ci:wrong-{PASSWORD}@")
        config = EnvConfig(repository="patcher-env-test", home=tmp_path / "h", index_url=wrong, extra_index_urls=[],
                           trusted_hosts=[str(index.server_address[0])], setup_timeout_s=300)
        try:
            with pytest.raises(SetupFailed) as e:
                ensure_env_image(staged, None, config, docker_client, print)
        finally:
            staged.cleanup()
    assert "private-dep" in str(e.value) and PREFIX not in str(e.value)
    assert basic("ci", f"wrong-{PASSWORD}") in index.seen


@pytest.mark.docker
def test_an_https_index_with_credentials_installs_through_the_proxys_tls(
        tmp_path: Path, docker_client: docker.DockerClient, sandbox_image: str) -> None:
    from patcher.env import EnvConfig, ensure_env_image
    from patcher.intake import stage_repo

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "private-dep", "1.0", "SIZE = 10\n")
    host = outward_address()
    ca, cert, key = tls_files(tmp_path, host)
    repo = make_repo(tmp_path / "r", {"requirements.txt": "private-dep==1.0\n", "a.py": ""})
    staged = stage_repo(str(repo))
    with serving_tls(IndexHandler, host, cert, key, root=str(wheels), auth=basic("ci", PASSWORD)) as index:
        url = f"https://ci:{PASSWORD}@{host}:{index.server_address[1]}/simple"
        config = EnvConfig(repository="patcher-env-test", home=tmp_path / "h", index_url=url, extra_index_urls=[],
                           trusted_hosts=[], ca_bundle=ca, setup_timeout_s=300)
        try:
            tag = ensure_env_image(staged, None, config, docker_client, print)
        finally:
            staged.cleanup()
    try:
        assert basic("ci", PASSWORD) in index.seen
        box = docker_client.containers.create(tag, ["/opt/patcher-env/bin/python", "-c",
                                                    "import private_dep; print(private_dep.SIZE)"], network_mode="none")
        try:
            box.start()
            assert box.wait(timeout=60)["StatusCode"] == 0, box.logs()
            assert box.logs().strip() == b"10"
        finally:
            box.remove(force=True)
    finally:
        docker_client.images.remove(tag, force=True)
