"""The last step of an environment image: what the setup user wrote made unwritable by anyone else.

Boxes run with a writable root filesystem (patcher/sandbox/hardening.py); only permissions keep the box user
from writing to it, and so to the host's disk. The setup runs as SETUP_UID, not the box's uid, so the venv it
installs is not the box user's to change; but the repo's build code runs as SETUP_UID too and could leave a
file or directory writable by all (or set-id). This step takes those bits away. It runs in a container of its
own, started from the setup's commit, after every process of the setup has ended: a process the build code
left running could otherwise undo it in the setup container. It runs as SETUP_UID (the owner of everything it
changes), hardened like every box, and only touches what needs it, so an honest venv is not copied into a
second layer. It also makes what the box must read readable (a file the build left mode 600), as it was when
the box user installed the venv itself.
"""

from __future__ import annotations

from typing import Any

import docker

from patcher.config import SETUP_UID
from patcher.env.config import EnvConfig
from patcher.errors import SetupFailed
from patcher.sandbox import hardened, owner_labels

SEAL = ("PATH=/usr/sbin:/usr/bin:/sbin:/bin; "
        f"find / -xdev -user {SETUP_UID} ! -type l \\( -perm /6022 -o ! -perm -004 -o -type d ! -perm -001 \\) "
        "-exec chmod go-w,ug-s,a+rX {} + 2>/dev/null; "
        f"! find / -xdev -user {SETUP_UID} ! -type l -perm /6022 2>/dev/null | grep -q .")
"""Run by /bin/sh on the system's PATH, never the venv's, where the build code could have put a `find` of its own.
Unreadable directories of the image's own (root's, mode 700) make find complain: what counts is the second
find, which must see nothing of SETUP_UID's writable by others or set-id."""


def seal(client: docker.DockerClient, image: str, config: EnvConfig, environment: dict[str, str]) -> Any:
    """A stopped container of `image` in which SEAL has run and succeeded; the caller commits and removes it.
    `environment` is the setup's: a commit keeps the container's, and the boxes run with the venv's PATH."""
    container = client.containers.create(**hardened(
        image=image, command=["/bin/sh", "-c", SEAL], uid=SETUP_UID, memory_mb=config.memory_mb, cpus=config.cpus,
        pids=config.pids, tmp_mb=64, nofile=4096, log_max="1m", labels=owner_labels(), working_dir="/workspace",
        volumes={}, environment=environment))
    try:
        container.start()
        code = container.wait(timeout=config.setup_timeout_s)["StatusCode"]
        if code != 0:
            raise SetupFailed(f"the environment could not be made read-only for the boxes (exit code {code})")
    except BaseException:
        container.remove(force=True)
        raise
    return container
