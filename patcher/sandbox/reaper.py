"""Labels that name the orchestrator owning a container or volume, and the reaper of dead owners' leftovers."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import docker
import docker.errors

from patcher.config import LABEL

OWNER = "io.patcher.owner"


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {LABEL: "1", OWNER: f"{socket.gethostname()}:{pid}:{_start_time(pid)}"}


def owner_alive(owner: str) -> bool:
    """True unless the owner is a process of this host that is gone (or whose pid was reused)."""
    try:
        host, pid, start = owner.rsplit(":", 2)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True  # another host's orchestrator: not ours to judge
    return _start_time(int(pid)) == start


def reap(client: docker.DockerClient) -> list[str]:
    """Remove containers and volumes whose owning orchestrator is dead. Returns what was removed."""
    removed = []
    for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):  # others remove too
        owner = c.labels.get(OWNER, "")
        if owner and not owner_alive(owner):  # no owner: its labels came from the image, someone else started it
            try:
                c.remove(force=True)
                removed.append(f"container {c.name}")
            except docker.errors.NotFound:
                pass
    for v in client.volumes.list(filters={"label": LABEL}):
        if not owner_alive((v.attrs.get("Labels") or {}).get(OWNER, "")):
            try:
                v.remove(force=True)
                removed.append(f"volume {v.name}")
            except docker.errors.APIError:
                pass  # still in use by a container being removed; the next reap takes it
    return removed
