"""The sandbox image: build it (`patcher image build`) and say whether it is current (`patcher doctor`).

Base image: the one asked for; else `python:3.11-slim` when present or pullable; else an offline base
made from Debian packages (debian_base.py). The sources are `Dockerfile.sandbox` in the parent
directory of the installed `sandbox` package (an editable install or a source checkout) and that
package's files. A build is skipped when the image's `io.patcher.content` label equals the hash of
those files, the uid and the base image id.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import tarfile
import time
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path

import docker
import docker.errors

from patcher.config import DEFAULT_BASE_IMAGE, LABEL, OFFLINE_BASE_IMAGE, SANDBOX_IMAGE, SANDBOX_UID
from patcher.env.debian_base import build_offline_base
from patcher.errors import EnvironmentUnavailable
from patcher.sandbox import DOCKER_ERRORS, docker_client, first_line, get_image

Log = Callable[[str], None]

CONTENT_LABEL = "io.patcher.content"
SOURCES_LABEL = "io.patcher.sources"
BASE_LABEL = "io.patcher.base"
BUILD_TIMEOUT_S = 900
PULL_TIMEOUT_S = 30
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def build_image(base: str | None, log: Log) -> str:
    """Build the sandbox image unless the existing one already holds these sources; return its tag."""
    check_sandbox_uid(SANDBOX_UID)
    files = _context_files()
    sources = _sources_digest(files, SANDBOX_UID)
    with closing(docker_client(timeout=BUILD_TIMEOUT_S)) as client:
        base_ref = _resolve_base(client, base, log)
        base_id = client.images.get(base_ref).id
        content = hashlib.sha256(f"{sources}\n{base_id}".encode()).hexdigest()
        current = get_image(client, SANDBOX_IMAGE)
        if current is not None and (current.labels or {}).get(CONTENT_LABEL) == content:
            log(f"{SANDBOX_IMAGE} is up to date ({_short(current.id)}, base {base_ref})")
            return SANDBOX_IMAGE
        log(f"building {SANDBOX_IMAGE} from {base_ref} (uid {SANDBOX_UID})")
        started = time.monotonic()
        labels = {LABEL: "1", CONTENT_LABEL: content, SOURCES_LABEL: sources, BASE_LABEL: base_ref}
        new_id = _build(client, files, base_ref, labels, log)
        if current is not None and current.id != new_id:
            with suppress(docker.errors.APIError):  # an environment image built on it keeps it alive
                client.images.remove(current.id)
        log(f"built {SANDBOX_IMAGE} ({_short(new_id)}) in {time.monotonic() - started:.1f} s")
    return SANDBOX_IMAGE


def image_status(client: docker.DockerClient | None = None) -> tuple[bool, str]:
    """(ok, message): is the sandbox image present and built from the current sandbox/ sources?"""
    try:
        files = _context_files()
        if client is None:
            with closing(docker_client()) as own:
                image = get_image(own, SANDBOX_IMAGE)
        else:
            image = get_image(client, SANDBOX_IMAGE)
    except EnvironmentUnavailable as e:
        return False, str(e)
    if image is None:
        return False, f"{SANDBOX_IMAGE} is missing: run `patcher image build`"
    labels = image.labels or {}
    if labels.get(SOURCES_LABEL) != _sources_digest(files, SANDBOX_UID):
        return False, f"{SANDBOX_IMAGE} is older than the sandbox/ sources: run `patcher image build`"
    return True, (f"{SANDBOX_IMAGE} ({_short(image.id)}, base {labels.get(BASE_LABEL, '?')}) "
                  "matches the sandbox/ sources")


def source_paths() -> tuple[Path, Path]:
    """(Dockerfile.sandbox, sandbox package dir): the Dockerfile sits in the package's parent dir."""
    spec = importlib.util.find_spec("sandbox")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentUnavailable("the sandbox package is not importable: install patcher from its "
                                     "source checkout with `pip install -e .`")
    package = Path(next(iter(spec.submodule_search_locations)))
    dockerfile = package.parent / "Dockerfile.sandbox"
    if not dockerfile.is_file():
        raise EnvironmentUnavailable(f"Dockerfile.sandbox is not at {dockerfile}: install patcher from its "
                                     "source checkout with `pip install -e .`")
    return dockerfile, package


def check_sandbox_uid(uid: int) -> None:
    for path, kind in ((Path("/etc/passwd"), "user"), (Path("/etc/group"), "group")):
        lines = path.read_text().splitlines() if path.is_file() else []
        for fields in (line.split(":") for line in lines):
            if len(fields) > 2 and fields[2] == str(uid):
                raise EnvironmentUnavailable(
                    f"id {uid} is the host {kind} {fields[0]!r}, but the sandbox uid must exist nowhere on "
                    "the host: change SANDBOX_UID in patcher/config.py to an unused id")


def _context_files() -> list[tuple[str, Path]]:
    dockerfile, package = source_paths()
    files = [("Dockerfile.sandbox", dockerfile)]
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package)
        if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
            files.append((f"sandbox/{rel.as_posix()}", path))
    return files


def _sources_digest(files: list[tuple[str, Path]], uid: int) -> str:
    digest = hashlib.sha256(f"uid={uid}\n".encode())
    for name, path in files:
        digest.update(f"{name}\n{path.stat().st_size}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _context_tar(files: list[tuple[str, Path]]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, path in files:
            info = tarfile.TarInfo(name)
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _build(client: docker.DockerClient, files: list[tuple[str, Path]], base: str,
           labels: dict[str, str], log: Log) -> str:
    tail: list[str] = []
    try:
        stream = client.api.build(
            fileobj=_context_tar(files), custom_context=True, dockerfile="Dockerfile.sandbox",
            tag=SANDBOX_IMAGE, buildargs={"BASE": base, "UID": str(SANDBOX_UID)}, labels=labels,
            rm=True, forcerm=True, pull=False, decode=True, use_config_proxy=False)
        for chunk in stream:
            for line in _ANSI.sub("", chunk.get("stream", "")).splitlines():
                if line.strip() and not line.lstrip().startswith(("--->", "Removing intermediate")):
                    tail = [*tail[-11:], line if len(line) <= 160 else f"{line[:157]}..."]
                if line.startswith("Step "):
                    log(line if len(line) <= 100 else f"{line[:97]}...")
            if "error" in chunk:
                reason = re.sub(r"The command '.*' returned", "a RUN step returned", chunk["error"], flags=re.S)
                raise docker.errors.BuildError(reason.strip(), [])
        return client.images.get(SANDBOX_IMAGE).id
    except DOCKER_ERRORS as e:
        last = "\n".join(f"  {line}" for line in tail)
        raise EnvironmentUnavailable(f"building {SANDBOX_IMAGE} from {base} failed ({first_line(e)}): fix "
                                     f"the cause and rerun `patcher image build`\n{last}".rstrip()) from e


def _resolve_base(client: docker.DockerClient, base: str | None, log: Log) -> str:
    if base == OFFLINE_BASE_IMAGE or (base is None and not _present_or_pulled(client, DEFAULT_BASE_IMAGE, log)):
        if get_image(client, OFFLINE_BASE_IMAGE) is None:
            build_offline_base(client, log)
        return OFFLINE_BASE_IMAGE
    if base is None or _present_or_pulled(client, base, log):
        return base or DEFAULT_BASE_IMAGE
    raise EnvironmentUnavailable(f"base image {base} is neither present nor pullable: load it with "
                                 "`docker load`, or omit --base to use an offline Debian base")


def _present_or_pulled(client: docker.DockerClient, ref: str, log: Log) -> bool:
    if get_image(client, ref) is not None:
        return True
    pull_client = docker.from_env(timeout=PULL_TIMEOUT_S)
    try:
        log(f"pulling {ref}")
        pull_client.images.pull(ref)
        return True
    except DOCKER_ERRORS as e:
        log(f"cannot pull {ref}: {first_line(e)}")
        return False
    finally:
        pull_client.close()


def _short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]
