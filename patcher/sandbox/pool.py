"""Blank boxes started ahead of need, so a job's next box is ready in the time its repo takes to copy in.

A blank is a hardened container (with its tmpfs volume as the repo directory) whose tool server has started
and waits for its hello; nothing of any job is in it yet. `BoxPool.take(cfg)` hands one over and starts the next in
the background, so the baseline, agent and verification boxes of a job each skip create + start. Spares
carry the same owner labels as every box, so the reaper removes them if the orchestrator dies.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import _create_container_args
from docker.types import Mount

from patcher.config import SandboxConfig
from patcher.sandbox.hardening import hardened
from patcher.sandbox.reaper import owner_labels

REPO_DIR = "/workspace/repo"
"""The box's repo directory: the root of its tmpfs volume, root-owned with the sticky bit (mode 1777), so the
sandbox user creates the work tree in it but can never rename or replace the root-owned `.git`."""
SERVER_FLAGS = ("-S",)
"""No site (no .pth code of the environment) in the key holder. Not -P (Python 3.11+; boxes also run 3.9):
BOOT drops the unsafe sys.path[0] itself (-c puts "", the working directory, the repo, there)."""
BOOT = ("import sys; sys.path[:] = [p for p in sys.path if p]; from sandbox.boot import main; "
        "sys.exit(main(sys.argv[1:]))")
"""sandbox/boot.py run as -c, not -m: runpy's imports would delay the start of the tree's unpacking."""
TREE_FIRST = ("--tree", "first")


@dataclass
class Blank:
    volume: Any
    container: Any
    socket: Any
    """The attach socket, opened before start so no byte of the server's output is missed."""

    def remove(self) -> None:
        for sock in (self.socket, getattr(self.socket, "_sock", None)):  # the SDK's SocketIO and the socket
            with contextlib.suppress(Exception):
                if sock is not None:
                    sock.close()
        for thing in (self.container, self.volume):
            with contextlib.suppress(docker.errors.APIError):
                thing.remove(force=True)


def start_blank(client: docker.DockerClient, cfg: SandboxConfig, git_dir: Path | None = None,
                tree_first: bool = False) -> Blank:
    """Volume, container and attach socket; the container started, its server waiting for a hello. `git_dir`:
    a `.git` of this machine, bind-mounted read-only at the repo's `.git` (the daemon must see this machine's
    files: a missing path is refused, never made). `tree_first`: the work tree is sent at once (not a spare),
    so the box unpacks it before it loads the server (sandbox/boot.py)."""
    labels = owner_labels()
    name = f"patcher-{secrets.token_hex(6)}"
    volume = client.volumes.create(name=name, driver="local", labels=labels, driver_opts={
        "type": "tmpfs", "device": "tmpfs",
        "o": f"size={cfg.workspace_mb}m,uid=0,gid=0,mode=1777,nosuid,nodev"})
    blank = Blank(volume, None, None)
    try:
        args = container_args(cfg, name, labels)
        if tree_first:
            args["command"] = [*args["command"], *TREE_FIRST]
        if git_dir is not None:
            args["mounts"] = [Mount(f"{REPO_DIR}/.git", str(git_dir), type="bind", read_only=True)]
        blank.container = _create(client, name, args)
        blank.socket = blank.container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        blank.container.start()
    except BaseException:
        if blank.container is None:
            with contextlib.suppress(docker.errors.APIError):
                volume.remove(force=True)
        else:
            blank.remove()
        raise
    return blank


def _create(client: docker.DockerClient, name: str, args: dict[str, Any]) -> Any:
    """`containers.create` without the inspect it adds after: one round trip less on a cold start."""
    resp = client.api.create_container(**_create_container_args({**args, "name": name, "version": client.api._version}))
    return client.containers.prepare_model({"Id": resp["Id"], "Name": f"/{name}", "State": {"Status": "created"}})


def container_args(cfg: SandboxConfig, volume: str, labels: dict[str, str]) -> dict[str, Any]:
    """`containers.create`'s arguments for a box: hardened, booting the tool server, the repo on `volume`."""
    command = ["python3", *SERVER_FLAGS, "-c", BOOT, "--repo", REPO_DIR, "--sweep", "uid"]
    return {**hardened(image=cfg.image, command=command, uid=cfg.uid, memory_mb=cfg.memory_mb, cpus=cfg.cpus,
                       cpu_shares=cfg.cpu_shares, pids=cfg.pids, tmp_mb=cfg.tmp_mb, nofile=cfg.nofile,
                       log_max=cfg.log_max, labels=labels,
                       working_dir=REPO_DIR, volumes={volume: {"bind": REPO_DIR, "mode": "rw,nocopy"}},
                       environment={"HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},
                       hostname=host_name()),
            "stdin_open": True, "tty": False}  # the tool server's stdio is the attached socket


def host_name() -> str:
    """The box's host name: the machine's own, as the tests would see it run there (a valid DNS label; `box` when
    the machine's is not one)."""
    name = socket.gethostname().split(".")[0][:63]
    return name if re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?", name) else "box"


class BoxPool:
    """Keeps `spares` blanks per sandbox config (or as many as `warm` asked for it); thread-safe; `close()`
    removes what was not taken."""

    def __init__(self, client: docker.DockerClient, spares: int = 1) -> None:
        self.client, self.spares = client, spares
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Future[Blank]]] = {}
        self._wanted: dict[str, int] = {}
        # Two starters: in auto mode the template search's boxes (a config of their own) are started beside
        # the agent's, and a verification box must not queue behind them.
        self._starter = ThreadPoolExecutor(max_workers=2, thread_name_prefix="patcher-box-pool")
        self._remover = ThreadPoolExecutor(max_workers=4, thread_name_prefix="patcher-box-remove")
        self._removals: list[Future[None]] = []
        self._closed = False

    def warm(self, cfg: SandboxConfig, spares: int | None = None) -> None:
        """Start spares for this config in the background (up to `spares` waiting, the pool's number unless
        given; a number given is kept for this config's refills)."""
        key = cfg.model_dump_json()
        with self._lock:
            if self._closed:
                return
            if spares is not None:
                self._wanted[key] = spares
            queue = self._waiting.setdefault(key, [])
            while len(queue) < self._wanted.get(key, self.spares):
                queue.append(self._starter.submit(self._start_after, queue[-1] if queue else None, cfg))

    def _start_after(self, ahead: Future[Blank] | None, cfg: SandboxConfig) -> Blank:
        """A config's spares start one after the other: two at once would slow the one a job waits for."""
        if ahead is not None:
            with contextlib.suppress(Exception):
                ahead.exception()  # waits for it to end, whatever the ending
        return start_blank(self.client, cfg)

    def take(self, cfg: SandboxConfig) -> Blank | None:
        """A started blank for this config (waiting for one that is still starting), or None; refills."""
        with self._lock:
            queue = self._waiting.get(cfg.model_dump_json(), [])
            future = queue.pop(0) if queue else None
        self.warm(cfg)
        if future is None:
            return None
        try:
            blank = future.result()
        except Exception:  # a spare that failed to start: the caller starts its own and sees the real error
            return None
        try:
            blank.container.reload()
            if blank.container.status == "running":
                return blank
        except docker.errors.APIError:
            pass
        blank.remove()  # it died while waiting (daemon restart, OOM): never hand out a broken box
        return None

    def retire(self, remove: Callable[[], None]) -> None:
        """Removes a used box in the background (a removal takes a Docker round trip of a few hundred ms that
        the job need not wait for); close() waits for every one. After close, at once, here."""
        with self._lock:
            if not self._closed:
                self._removals.append(self._remover.submit(remove))
                return
        remove()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            futures = [f for queue in self._waiting.values() for f in queue]
            self._waiting.clear()
        for future in futures:
            with contextlib.suppress(Exception):
                self._removals.append(self._remover.submit(future.result().remove))
        self._starter.shutdown(wait=True)
        self._remover.shutdown(wait=True)  # every retired box and unused spare is gone when close returns

    def __enter__(self) -> BoxPool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
