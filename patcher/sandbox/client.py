"""The one Docker client factory, and the errors the SDK raises when the daemon is away or fails."""

from __future__ import annotations

import os
import socket

import docker
import docker.errors
import requests
from docker.models.images import Image

from patcher.errors import EnvironmentUnavailable

DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def docker_client(timeout: float = 120) -> docker.DockerClient:
    """A client whose daemon answered a ping, or EnvironmentUnavailable saying what to do."""
    client = None
    try:
        _connect_unix_socket()
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DOCKER_ERRORS as e:
        if client is not None:
            client.close()
        raise EnvironmentUnavailable(
            f"no Docker daemon answers at {docker_host()} ({first_line(e)}): install docker.io and start "
            "dockerd, or run scripts/setup.sh") from e
    return client


_SHARES: dict[str, bool] = {}
UNIX_BASE_URL = "http+docker://localhost"
"""The SDK's base URL for a daemon on a unix socket (ssh gives http+docker://ssh, tcp http(s)://host)."""


def shares_files(client: docker.DockerClient) -> bool:
    """Whether the daemon sees this machine's files, so a bind mount of a path here is that path: the client
    speaks to it over a unix socket and it runs on this host (its name is our host name). Asked once per
    daemon address; a daemon that refused such a mount is forgotten (forget_sharing)."""
    url = str(client.api.base_url)
    if url not in _SHARES:
        try:
            local = url == UNIX_BASE_URL and client.info().get("Name") == socket.gethostname()
        except DOCKER_ERRORS:
            local = False
        _SHARES[url] = local
    return _SHARES[url]


def forget_sharing(client: docker.DockerClient) -> None:
    _SHARES[str(client.api.base_url)] = False


def get_image(client: docker.DockerClient, ref: str) -> Image | None:
    """The image, or None when there is none; EnvironmentUnavailable when the daemon fails to say."""
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except DOCKER_ERRORS as e:
        raise EnvironmentUnavailable(f"the Docker daemon at {docker_host()} failed to list images "
                                     f"({first_line(e)}): check `docker info`") from e


def first_line(error: BaseException) -> str:
    text = str(getattr(error, "explanation", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _connect_unix_socket() -> None:
    # The SDK leaks its socket when a unix socket refuses; try it here first with one we close.
    if docker_host().startswith("unix://"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(docker_host().removeprefix("unix://"))
