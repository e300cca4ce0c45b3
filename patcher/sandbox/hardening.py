"""The one set of `docker create` arguments every container patcher starts shares (job boxes, setup step).

No network, every capability dropped, no-new-privileges, an init process, the sandbox uid, limits on pids,
memory (swap set equal, so none is added), CPU and open files, no core dumps, a capped json-file log, small
tmpfs mounts at /tmp and /var/tmp, no proxy settings from the Docker client's config; a private IPC namespace
unless the caller turns it off by name and says why.

The root filesystem is writable, as on the machines the code runs on in production: a read-only one was a
signal code could read (`os.statvfs("/").f_flag & os.ST_RDONLY`) to behave one way in the box and another
outside. What keeps the host's disk safe is that the box user may write nowhere on it: everything in the
image is root's (or, in an environment image, the setup user's: env/build.py) and not writable by others,
and the places everyone may write (/tmp, /var/tmp, the repo's volume, /dev/shm) are size-limited tmpfs,
which count against the memory limit. `read_only=True` is still there for a caller that wants it.
"""

from __future__ import annotations

from typing import Any

from docker.types import LogConfig, Ulimit

TMPFS = ("/tmp", "/var/tmp")
"""The image's world-writable directories (mode 1777), each its own tmpfs of `tmp_mb`: on the root filesystem
they would let the box user fill the host's disk."""


def hardened(*, image: str, command: list[str], uid: int, memory_mb: int, cpus: float, pids: int, tmp_mb: int,
             nofile: int, log_max: str, labels: dict[str, str], working_dir: str, environment: dict[str, str],
             volumes: dict[str, dict[str, str]], read_only: bool = False, private_ipc: bool = True,
             cpu_shares: int | None = None, hostname: str | None = None) -> dict[str, Any]:
    """Keyword arguments for `client.containers.create`; the caller adds only what is not about confinement."""
    args: dict[str, Any] = {
        "image": image, "command": command, "user": f"{uid}:{uid}", "init": True, "network_mode": "none",
        "volumes": volumes, "tmpfs": {path: f"size={tmp_mb}m,nosuid,nodev" for path in TMPFS},
        "cap_drop": ["ALL"], "security_opt": ["no-new-privileges"],
        "pids_limit": pids, "mem_limit": f"{memory_mb}m", "memswap_limit": f"{memory_mb}m",
        "nano_cpus": int(cpus * 1e9),
        "ulimits": [Ulimit(name="nofile", soft=nofile, hard=nofile), Ulimit(name="core", soft=0, hard=0)],
        "log_config": LogConfig(type="json-file", config={"max-size": log_max, "max-file": "1"}),
        "labels": labels, "working_dir": working_dir, "use_config_proxy": False, "environment": environment,
    }
    if hostname:  # else Docker names the box after its container id (twelve hex digits), which no host is called
        args["hostname"] = hostname
    if cpu_shares is not None:  # a weight among the boxes, on top of the nano_cpus cap
        args["cpu_shares"] = cpu_shares
    if read_only:
        args["read_only"] = True
    if private_ipc:
        args["ipc_mode"] = "private"
    return args
