"""Done-when of issue 24: `patcher fix` on a private remote (git http-backend behind a token) whose
requirement comes from a private index (basic auth), installed by real pip in the setup container through
the host's proxy, verifies end to end; a test inside the box looks for the secrets everywhere it can, and
every output of the job (stdout, stderr, JSON, trace, PATCHER_HOME) is grepped for them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from .helpers import git, make_repo
from .private_servers import (
    GitHandler,
    IndexHandler,
    Recorder,
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


@dataclass
class Private:
    url: str
    """The private remote's URL of the shop repository."""
    env: dict[str, str]
    """What the host's patcher is given: the tokens file and pip's index settings (with the password)."""
    remote: Recorder
    index: Recorder


@contextmanager
def private_shop(tmp_path: Path, sandbox_image: str) -> Iterator[Private]:
    """The bundled shop example with a requirement only the private index has and the box test, on a
    private remote; both servers run until the block ends."""
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
        env = {"PATCHER_SANDBOX_IMAGE": sandbox_image, "PATCHER_GIT_TOKENS_FILE": str(token_file),
               "PIP_INDEX_URL": index_url, "PIP_TRUSTED_HOST": str(index.server_address[0]), "PIP_EXTRA_INDEX_URL": ""}
        yield Private(url_of(remote, "/shop.git"), env, remote, index)


def _forget_image(client: docker.DockerClient, result: dict[str, Any]) -> None:
    """The environment image the job built: its key holds the index URL with this run's port, so no later
    run reuses it."""
    tag = (result.get("provenance") or {}).get("image") or ""
    if tag.startswith("patcher-env:"):
        client.images.remove(tag, force=True)


def _check_verified(result: dict[str, Any], private: Private, trace: str) -> None:
    assert result["status"] == "verified", result["message"]
    assert result["files_changed"] == ["shop/pagination.py"]
    assert basic("ci", PASSWORD) in private.index.seen and basic("ci", TOKEN) in private.remote.seen
    suite = next(json.loads(line) for line in trace.splitlines() if '"base-suite"' in line)
    # Only the crash fails on the base: the box test and the dependency test ran and passed.
    assert suite["failed"] == ["tests/test_pagination.py::test_last_page"] and suite["passed"] >= 4, suite


def _everything(root: Path) -> str:
    return "".join(p.read_bytes().decode(errors="replace") for p in root.rglob("*") if p.is_file())


@pytest.mark.docker
def test_a_private_remote_with_a_private_index_dependency_verifies_and_leaks_nothing(
        tmp_path: Path, docker_client: docker.DockerClient, sandbox_image: str) -> None:
    home = tmp_path / "home"
    with private_shop(tmp_path, sandbox_image) as private:
        argv = [str(Path(sys.executable).parent / "patcher"), "fix", private.url, "--traceback",
                str(ROOT / "examples" / "shop.traceback.txt"), "--engine", "offline", "--test",
                "python -m pytest -q tests/test_pagination.py", "--json"]
        out = subprocess.run(argv, env={**os.environ, **private.env, "PATCHER_HOME": str(home)},
                             capture_output=True, text=True, timeout=600)
    result = json.loads(out.stdout)
    _forget_image(docker_client, result)
    assert result["status"] == "verified", out.stderr[-3000:]
    _check_verified(result, private, Path(result["trace"]).read_text())
    assert PREFIX not in out.stdout + out.stderr + _everything(home), "a secret is in an output of the job"


@pytest.mark.docker
def test_the_service_verifies_a_private_job_and_its_record_api_and_store_hold_no_secret(
        tmp_path: Path, docker_client: docker.DockerClient, sandbox_image: str) -> None:
    home = tmp_path / "home"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHER_", "OPENAI_"))}
    with private_shop(tmp_path, sandbox_image) as private:
        env = {**clean, **private.env, "PATCHER_HOME": str(home), "PATCHER_DEV": "1", "PATCHER_WORKERS": "1",
               "PATCHER_ALLOW_PRIVATE_HOSTS": "1"}
        log = (tmp_path / "server.log").open("wb")
        server = subprocess.Popen([sys.executable, "-c", f"from patcher.server.app import serve; "
                                   f"serve('127.0.0.1', {port})"], env=env, cwd=ROOT, stdout=log, stderr=log)
        try:
            answers = _run_service_job(f"http://127.0.0.1:{port}", private.url)
        finally:
            server.terminate()
            server.wait(30)
            log.close()
    result = json.loads(answers[0])
    _forget_image(docker_client, result)
    _check_verified(result, private, Path(result["trace"]).read_text())
    seen = "".join(answers) + _everything(home) + (tmp_path / "server.log").read_text(errors="replace")
    assert PREFIX not in seen, "a secret is in the record, the API's answers, the store or the server's log"


def _run_service_job(base: str, repo: str) -> list[str]:
    """The job's result, its record, its events and the job list, as the API answers them."""
    with httpx.Client(base_url=base, timeout=30) as c:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                c.get("/openapi.json")
                break
            except httpx.TransportError:
                time.sleep(0.2)
        tb = (ROOT / "examples" / "shop.traceback.txt").read_text()
        job = c.post("/v1/jobs", json={"repo": repo, "traceback": tb,
                                       "test_command": "python -m pytest -q tests/test_pagination.py"})
        assert job.status_code == 202, job.text
        job_id = job.json()["id"]
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            r = c.get(f"/v1/jobs/{job_id}")
            if r.headers.get("X-Patcher-Job-State") in ("done", "failed", "cancelled"):
                break
            time.sleep(0.5)
        return [r.text, c.get(f"/v1/jobs/{job_id}/attestation").text, c.get(f"/v1/jobs/{job_id}/events").text,
                c.get("/v1/jobs").text]


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
