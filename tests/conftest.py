"""Session fixtures for tests that need the real Docker daemon and the sandbox image."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import docker
import pytest

from patcher import hostdeps
from patcher.env import image
from patcher.errors import EnvironmentUnavailable
from tests.support import netns


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test: every host program the suite calls is there (CI=true: else stop with what to install)."""
    gone = hostdeps.missing()
    if not gone:
        return
    lines = "; ".join(hostdeps.describe(p) for p in gone)
    if os.environ.get("CI", "").lower() == "true":
        pytest.exit(f"CI=true requires every host program: {lines} (or run scripts/setup.sh)", returncode=3)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"WARNING: tests that call them will fail: {lines}", yellow=True, bold=True)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    """A client whose daemon answered; skips (or fails, when CI=true) if none answers."""
    try:
        client = image.docker_client(timeout=120)
    except EnvironmentUnavailable as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires a Docker daemon, but {e}")
        pytest.skip(str(e))
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client: docker.DockerClient) -> str:
    """Tag of the sandbox image, built (or found up to date) once per session."""
    return image.build_image(None, log=lambda message: print(f"[image] {message}"))


@pytest.fixture(scope="session")
def python_image(sandbox_image: str) -> Callable[[str], str]:
    """The sandbox image of a Python version (X.Y), built (or found current) once per session: from python:X.Y-slim,
    else the Debian release that ships it (a minute or more the first time on a machine). A version this machine
    cannot have skips the test (fails it, when CI=true)."""
    built: dict[str, str] = {}

    def get(version: str) -> str:
        if version not in built:
            try:
                built[version] = image.build_image(None, log=lambda m: print(f"[image {version}] {m}"),
                                                   python=version)
            except EnvironmentUnavailable as e:
                if os.environ.get("CI", "").lower() == "true":
                    pytest.fail(f"CI=true requires the Python {version} sandbox image, but {e}")
                pytest.skip(f"no Python {version} here: {e}")
        return built[version]

    return get


@pytest.fixture(scope="session")
def test_host() -> Iterator[netns.TestHost]:
    """A network namespace of this session's own, on a veth pair (tests/support/netns.py): servers the egress proxy
    must reach listen there, never on another address of this machine. Skips without `ip` or the rights to
    make it (fails, when CI=true)."""
    try:
        host = netns.create(os.getpid())
    except (netns.NetnsUnavailable, OSError) as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires a test network namespace, but {e}")
        pytest.skip(f"no test network namespace: {e}")
    try:
        yield host
    finally:
        netns.remove(os.getpid())
