"""Shared by the tests: the sandbox config of the Docker tests and what they own."""

from __future__ import annotations

import docker

from patcher.config import LABEL, SandboxConfig
from patcher.sandbox import OWNER


def config(image: str, **kw: object) -> SandboxConfig:
    base: dict[str, object] = {"image": image, "memory_mb": 512, "workspace_mb": 128, "tmp_mb": 64, "pids": 64,
                               "call_timeout_s": 20.0, "test_timeout_s": 30.0, "backstop_s": 10.0}
    return SandboxConfig(**{**base, **kw})  # type: ignore[arg-type]


def _owned(client: docker.DockerClient, owner: str) -> tuple[list[str], list[str]]:
    filters = {"label": [LABEL, f"{OWNER}={owner}"]}
    return ([c.name for c in client.containers.list(all=True, filters=filters, ignore_removed=True)],
            [v.name for v in client.volumes.list(filters=filters)])
