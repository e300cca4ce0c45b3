from __future__ import annotations

import time
from pathlib import Path

import docker
import pytest

from patcher.config import LABEL, SANDBOX_UID
from patcher.doctor import run_doctor
from patcher.env import build_image, image_status
from patcher.env.debian_base import apt_mirror
from patcher.env.image import CONTENT_LABEL, check_sandbox_uid, source_paths
from patcher.errors import EnvironmentUnavailable

DEBIAN_SOURCES = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "a-security.sources").write_text(DEBIAN_SOURCES.split("\n\n")[1])
    (tmp_path / "debian.sources").write_text(DEBIAN_SOURCES)
    assert apt_mirror(tmp_path, tmp_path / "absent.list") == "http://mirror.example/debian"


def test_mirror_from_one_line_sources_list(tmp_path: Path) -> None:
    listing = tmp_path / "sources.list"
    listing.write_text("# deb http://commented.example/debian bookworm main\n"
                       "deb http://security.example/debian-security bookworm-security main\n"
                       "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n")
    assert apt_mirror(tmp_path, listing) == "http://mirror.example/debian"


def test_mirror_falls_back_to_deb_debian_org(tmp_path: Path) -> None:
    assert apt_mirror(tmp_path, tmp_path / "absent.list") == "http://deb.debian.org/debian"


def test_a_sandbox_uid_that_is_a_host_account_is_refused() -> None:
    with pytest.raises(EnvironmentUnavailable, match="'root'"):
        check_sandbox_uid(0)
    check_sandbox_uid(SANDBOX_UID)


def test_doctor_exits_3_without_a_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-to-be-printed")
    checks, code = run_doctor()
    assert code == 3
    assert [c.status for c in checks[:2]] == ["FAIL", "FAIL"]
    assert "scripts/setup.sh" in checks[0].line()
    assert all("sk-not-to-be-printed" not in c.line() for c in checks)


@pytest.mark.docker
def test_image_is_built_labelled_and_current(docker_client: docker.DockerClient, sandbox_image: str) -> None:
    labels = docker_client.images.get(sandbox_image).labels
    assert labels[LABEL] == "1" and labels[CONTENT_LABEL]
    assert image_status(docker_client)[0]


@pytest.mark.docker
def test_second_build_is_up_to_date_and_fast(sandbox_image: str) -> None:
    messages: list[str] = []
    started = time.monotonic()
    assert build_image(None, log=messages.append) == sandbox_image
    assert time.monotonic() - started < 10
    assert any("up to date" in m for m in messages), messages
    assert not any(m.startswith("Step ") for m in messages)


@pytest.mark.docker
def test_container_has_the_tools_the_unprivileged_user_and_the_package(
        docker_client: docker.DockerClient, sandbox_image: str) -> None:
    _, package = source_paths()
    expected = sorted({p.name for p in package.glob("*.py")} | {"server.py"})
    script = ("id -u; id -g; python3 --version; python --version; git --version; rg --version; "
              "python -m pytest --version; python -c 'import sandbox.protocol'; "
              f"cd /opt/patcher/sandbox && ls {' '.join(expected)}")
    out = docker_client.containers.run(sandbox_image, ["sh", "-c", script], remove=True,
                                       network_mode="none", stderr=True).decode()
    lines = out.splitlines()
    assert lines[:2] == [str(SANDBOX_UID), str(SANDBOX_UID)]
    for needle in ("Python 3", "git version", "ripgrep", "pytest", *expected):
        assert needle in out, out


@pytest.mark.docker
def test_doctor_is_healthy_with_the_image(sandbox_image: str) -> None:
    checks, code = run_doctor()
    assert code == 0, [c.line() for c in checks]
    assert checks[0].line().startswith("ok    docker daemon: ")
    assert checks[1].line().startswith("ok    sandbox image: ")
