"""One hardened container per job, the tool server as its main process, spoken to over the attach socket."""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors

from patcher.config import SandboxConfig, allowlist_of
from patcher.errors import EnvironmentUnavailable, SandboxError
from patcher.intake import StagedRepo
from patcher.sandbox.base import deadline_for
from patcher.sandbox.channel import Channel
from patcher.sandbox.client import docker_client, forget_sharing, shares_files
from patcher.sandbox.pool import REPO_DIR, Blank, BoxPool, start_blank
from patcher.stopper import Stopper
from sandbox.protocol import (
    REPORT_DIR,
    ModulesRequest,
    PingRequest,
    ReadFileRequest,
    Request,
    SearchCodeRequest,
    ToolResult,
)

_MODULES: dict[str, ToolResult] = {}
"""ModulesRequest's answer by image id (an image never changes; a rebuilt tag is another id)."""
_MODULES_LOCK = threading.Lock()
_PUTTER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="patcher-git-put")
"""Puts each box's `.git` in (a put_archive: Docker extracts it as root), while the box unpacks its tree."""
NEEDS_NO_GIT = (ReadFileRequest, SearchCodeRequest, PingRequest, ModulesRequest)
"""Requests that only read the work tree (or nothing of the repo): answered before `.git` is in place."""


def require_image(client: docker.DockerClient, image: str) -> None:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound as e:
        raise EnvironmentUnavailable(f"sandbox image {image} is missing: run `patcher image build`") from e


class AttachStream:
    """Demultiplexes the attach socket (8-byte frame headers) into the server's stdout bytes."""

    def __init__(self, sock: Any) -> None:
        self._io = sock  # the SDK's SocketIO: closing only the socket under it leaves the fd open
        self._sock = getattr(sock, "_sock", sock)
        self._raw = bytearray()
        self.stderr = bytearray()

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as e:  # shut by kill(), or the container is gone
            raise SandboxError(f"the sandbox's stream is closed (the container was stopped): {e}") from e

    def recv(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            if len(self._raw) >= 8:
                size = int.from_bytes(self._raw[4:8], "big")
                if len(self._raw) >= 8 + size:
                    kind, payload = self._raw[0], bytes(self._raw[8 : 8 + size])
                    del self._raw[: 8 + size]
                    if kind == 1:
                        return payload
                    self.stderr = (self.stderr + payload)[-8192:]
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(262144)
            except TimeoutError as e:
                raise TimeoutError from e
            if not chunk:
                return b""
            self._raw += chunk

    def shutdown(self) -> None:
        """Ends the stream both ways now: a recv blocked on it in another thread returns at once."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._io.close()
        self._sock.close()


class DockerSandbox:
    """Starts the container (network none, a root the box user may not write, tmpfs workspace volume, no
    capabilities...), or takes a blank one already started by a BoxPool, copies the repo in and says hello."""

    def __init__(self, staged: StagedRepo, config: SandboxConfig | None = None,
                 client: docker.DockerClient | None = None, pool: BoxPool | None = None) -> None:
        self.config = cfg = config or SandboxConfig()
        self.client = client or docker_client()
        self.base_commit = staged.base_commit
        self.allowlist = allowlist_of(cfg)
        self.report_dir = REPORT_DIR
        self.container: Any = None
        self.volume: Any = None
        self._stream: AttachStream | None = None
        self._pool = pool
        self._broken = ""
        self._git: Future[None] | None = None
        try:
            with ThreadPoolExecutor(max_workers=1) as builder:
                tree = builder.submit(staged.tree_tar, cfg.uid)  # built while Docker creates and starts the box
                blank, mounted = self._blank(staged)
                self.volume, self.container = blank.volume, blank.container
                self._stream = AttachStream(blank.socket)
                git = b""
                if not mounted:  # a spare started before its job, or a daemon elsewhere: Docker puts .git in
                    git = builder.submit(staged.git_tar).result()
                    self._git = _PUTTER.submit(_put_git, self.container, git)
                self._channel = Channel(self._stream.send, self._stream.recv, cfg.backstop_s)
                size = len(tree.result()) + len(git)
                if size > cfg.workspace_mb * 2**20:
                    raise SandboxError(f"the repository ({size / 2**20:.1f} MiB as tar) does not fit the sandbox's "
                                       f"{cfg.workspace_mb} MiB workspace: raise workspace_mb")
                self._channel.hello(cfg.allowlist, timeout_s=30 + size / 2**20, base=self.base_commit,
                                    tree=tree.result())
        except SandboxError as e:
            why = self._told(e)
            self.close()
            if why != str(e):
                raise SandboxError(why) from e
            raise
        except docker.errors.ImageNotFound as e:
            self.close()
            raise EnvironmentUnavailable(f"sandbox image {cfg.image} is missing: run `patcher image build`") from e
        except docker.errors.APIError as e:
            self.close()
            raise SandboxError(f"could not start the sandbox container: {e.explanation or e}") from e
        except BaseException:
            self.close()
            raise

    def _blank(self, staged: StagedRepo) -> tuple[Blank, bool]:
        """A spare from the pool, or a box started now (told its tree comes at once); and whether .git is
        mounted in it: read-only, at its start, when the daemon sees this machine's files (else, or when the
        daemon refuses the mount, Docker puts it in after the start)."""
        blank = self._pool.take(self.config) if self._pool else None
        if blank is not None:
            return blank, False
        if shares_files(self.client):
            try:
                return start_blank(self.client, self.config, staged.path / ".git", tree_first=True), True
            except docker.errors.APIError as e:
                if "mount" not in str(e).lower():  # a missing image, a daemon error: not about the mount
                    raise
                forget_sharing(self.client)  # a daemon that cannot mount this path: copy it in from now on
        return start_blank(self.client, self.config, tree_first=True), False

    def call(self, request: Request, deadline_s: float | None = None) -> ToolResult:
        if self._broken:
            raise SandboxError(f"the sandbox was stopped earlier: {self._broken}")
        if not isinstance(request, NEEDS_NO_GIT):
            self._git_in_place()
        if isinstance(request, ModulesRequest):
            return self._modules(deadline_s)
        return self._call(request, deadline_s)

    def _git_in_place(self) -> None:
        """Waits for Docker to have put `.git` in: before that no test runs (its code could make a `.git` of its
        own first), no diff is asked and nothing is written."""
        if self._git is None:
            return
        try:
            self._git.result(timeout=self.config.backstop_s + 60)
        except Exception as e:
            self._broken = f"Docker could not put the repository's .git into the sandbox: {e}"
            self.kill()
            raise SandboxError(self._broken) from e
        self._git = None

    def _modules(self, deadline_s: float | None) -> ToolResult:
        """What the image has installed, asked once per image id: the server scans only the image's site
        directories (it runs with -S -P), so the answer is the image's, whatever repo the box holds."""
        try:
            image_id = str(self.client.api.inspect_image(self.config.image)["Id"])
        except docker.errors.APIError:
            return self._call(ModulesRequest(), deadline_s)
        with _MODULES_LOCK:
            known = _MODULES.get(image_id)
        if known is not None:
            return copy.deepcopy(known)
        got = self._call(ModulesRequest(), deadline_s)
        if not got.is_error:
            with _MODULES_LOCK:
                _MODULES[image_id] = got
        return got

    def _call(self, request: Request, deadline_s: float | None) -> ToolResult:
        try:
            return self._channel.call(request, deadline_s or deadline_for(self.config, request))
        except SandboxError as e:
            # The server missed its own deadline or lied: nothing in the box can be trusted any more.
            self._broken = self._told(e)
            with contextlib.suppress(docker.errors.APIError):
                self.container.kill()
            if self._broken != str(e):
                raise SandboxError(self._broken) from e
            raise

    def _told(self, e: SandboxError) -> str:
        """The error, with the box's last line on stderr and, when its stream ended, how its container ended."""
        why = str(e)
        said = self._stream.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if self._stream else []
        if said and said[0].removeprefix("sandbox.server: ") not in why:
            why += f"; the box said: {said[0][:600]}"
        if "closed its stream" in why and self.container is not None:
            with contextlib.suppress(docker.errors.APIError, KeyError, TypeError):
                state = self.client.api.inspect_container(self.container.id)["State"]
                why += (f"; its container is {state['Status']}, exit code {state['ExitCode']}"
                        + (", killed for memory" if state.get("OOMKilled") else "")
                        + (f", Docker: {state['Error']}" if state.get("Error") else ""))
        return why

    def close(self) -> None:
        if self._git is not None:
            self._git.cancel()  # not started yet: never for a closed box
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._pool is not None and self.container is not None:
            self._pool.retire(_Remains(self.container, self.volume).remove)  # the pool's close waits for it
            self.container = self.volume = None
            return
        _Remains(self.container, self.volume).remove()
        self.container = self.volume = None

    def kill(self) -> None:
        stream = self._stream
        if stream is not None:  # whatever waits on the box fails now, not once Docker has delivered the kill
            stream.shutdown()
        if self.container is not None:
            with contextlib.suppress(Exception):  # already gone, or Docker busy: close() removes it anyway
                self.container.kill()

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _put_git(container: Any, git_tar: bytes) -> None:
    """`.git` put in by Docker as root (root-owned, read-only) once the box runs (its tmpfs repo directory is
    mounted only then), beside the tree's unpacking in the box."""
    if not container.put_archive(REPO_DIR, git_tar):
        raise SandboxError("Docker refused to copy .git in")


@dataclass(frozen=True)
class _Remains:
    """A closed box's container and volume, removed (force: killed first) by whoever calls remove()."""

    container: Any
    volume: Any

    def remove(self) -> None:
        for thing in (self.container, self.volume):
            if thing is None:
                continue
            try:
                thing.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                time.sleep(0.2)
                with contextlib.suppress(docker.errors.APIError):
                    thing.remove(force=True)


@dataclass(frozen=True)
class DockerBoxes:
    """A job's box factory (an OpenBox): fresh hardened boxes from one image, the next one warmed in the
    pool while this one works, each watched by the job's stopper (cancel kills it)."""

    config: SandboxConfig
    client: docker.DockerClient
    pool: BoxPool
    stopper: Stopper

    def __call__(self, tree: StagedRepo) -> DockerSandbox:
        self.stopper.check()
        return self.stopper.watch(DockerSandbox(tree, self.config, self.client, self.pool))
