"""The box a job works in: the Sandbox protocol and its factory, Docker boxes for jobs (pooled, reaped by
owner label), a local box for fast tests, and the one Docker client factory.

Lifecycle (start, close) lives in each class; operations are one typed request -> one ToolResult.
"""

from patcher.sandbox.base import OpenBox, Sandbox, deadline_for, diff_of
from patcher.sandbox.client import DOCKER_ERRORS, docker_client, docker_host, first_line, get_image
from patcher.sandbox.docker import AttachStream, DockerBoxes, DockerSandbox, require_image
from patcher.sandbox.hardening import hardened
from patcher.sandbox.local import LocalSandbox
from patcher.sandbox.pool import BoxPool, container_args
from patcher.sandbox.reaper import OWNER, owner_labels, reap

__all__ = [
    "DOCKER_ERRORS",
    "OWNER",
    "AttachStream",
    "BoxPool",
    "DockerBoxes",
    "DockerSandbox",
    "LocalSandbox",
    "OpenBox",
    "Sandbox",
    "container_args",
    "deadline_for",
    "diff_of",
    "docker_client",
    "docker_host",
    "first_line",
    "get_image",
    "hardened",
    "owner_labels",
    "reap",
    "require_image",
]
