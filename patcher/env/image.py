"""The sandbox image: build it (`patcher image build [--python X.Y]`) and say whether it is current (`patcher doctor`).

Base image: the one asked for; else `python:X.Y-slim` (3.11 by default) when present or pullable; else an
offline base made from the Debian release that ships X.Y (debian_base.py). The default version's image is
SANDBOX_IMAGE; another version's is SANDBOX_IMAGE with `-pyX.Y` after its tag (`sandbox_tag`), so checkouts
with their own PATCHER_SANDBOX_IMAGE never share one. The sources are `Dockerfile.sandbox` in the parent
directory of the installed `sandbox` package (an editable install or a source checkout) and that
package's files. A build is skipped when the image's `io.patcher.content` label equals the hash of
those files, the uid and the base image id. Every sandbox image carries its python3's version in a label.
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
from docker.models.images import Image

from patcher.config import DEFAULT_PYTHON, LABEL, PYTHON_LABEL, SANDBOX_IMAGE, SANDBOX_UID, SETUP_UID
from patcher.env.debian_base import build_offline_base, offline_tag
from patcher.env.pyversion import OFFLINE_SUITES
from patcher.errors import EnvironmentUnavailable
from patcher.sandbox import DOCKER_ERRORS, docker_client, first_line, get_image

Log = Callable[[str], None]

CONTENT_LABEL = "io.patcher.content"
SOURCES_LABEL = "io.patcher.sources"
BASE_LABEL = "io.patcher.base"
BUILD_TIMEOUT_S = 900
PULL_TIMEOUT_S = 30
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ASKED: dict[str, str] = {}
"""Image id -> python3 version, for images that carry neither label nor PYTHON_VERSION."""


def build_image(base: str | None, log: Log, python: str | None = None) -> str:
    """Build the sandbox image (of Python `python`, X.Y, when given) unless the existing one already holds
    these sources; return its tag."""
    check_sandbox_uid(SANDBOX_UID)
    check_sandbox_uid(SETUP_UID)
    tag = sandbox_tag(python) if python else SANDBOX_IMAGE
    files = _context_files()
    sources = _sources_digest(files, SANDBOX_UID)
    with closing(docker_client(timeout=BUILD_TIMEOUT_S)) as client:
        base_ref = _resolve_base(client, base, python or DEFAULT_PYTHON, log)
        base_image = client.images.get(base_ref)
        version = python_of(client, base_image)
        if python and not version.startswith(f"{python}."):
            raise EnvironmentUnavailable(f"base image {base_ref} has Python {version or '(none found)'}, not "
                                         f"{python}: omit --base, or name a base with Python {python}")
        content = hashlib.sha256(f"{sources}\n{base_image.id}".encode()).hexdigest()
        current = get_image(client, tag)
        if current is not None and (current.labels or {}).get(CONTENT_LABEL) == content:
            log(f"{tag} is up to date ({_short(current.id)}, base {base_ref}, Python {version})")
            return tag
        log(f"building {tag} from {base_ref} (Python {version}, uid {SANDBOX_UID})")
        started = time.monotonic()
        labels = {LABEL: "1", CONTENT_LABEL: content, SOURCES_LABEL: sources, BASE_LABEL: base_ref,
                  PYTHON_LABEL: version}
        new_id = _build(client, files, base_ref, tag, labels, log)
        if current is not None and current.id != new_id:
            with suppress(docker.errors.APIError):  # an environment image built on it keeps it alive
                client.images.remove(current.id)
        log(f"built {tag} ({_short(new_id)}) in {time.monotonic() - started:.1f} s")
    return tag


def sandbox_tag(python: str) -> str:
    """The sandbox image of Python X.Y: SANDBOX_IMAGE for the default version, else its tag + `-pyX.Y`."""
    if python == DEFAULT_PYTHON:
        return SANDBOX_IMAGE
    name, colon, tag = SANDBOX_IMAGE.rpartition(":")
    if not colon or "/" in tag:  # no tag (a registry port is not one): Docker's default
        name, tag = SANDBOX_IMAGE, "latest"
    return f"{name}:{tag}-py{python}"


def python_of(client: docker.DockerClient, image: Image) -> str:
    """The full version of an image's python3: its label, the official images' PYTHON_VERSION, else asked
    of a throwaway container without network (once per image id)."""
    labels = image.labels or {}
    env = dict(item.partition("=")[::2] for item in (image.attrs.get("Config") or {}).get("Env") or [])
    known = labels.get(PYTHON_LABEL) or env.get("PYTHON_VERSION") or _ASKED.get(image.id)
    if known:
        return known
    try:
        out = client.containers.run(image.id, ["python3", "-c", "import platform; print(platform.python_version())"],
                                    remove=True, network_mode="none", labels={LABEL: "1"}, stderr=False)
    except DOCKER_ERRORS:
        return ""
    _ASKED[image.id] = out.decode(errors="replace").strip()
    return _ASKED[image.id]


def image_status(client: docker.DockerClient | None = None, tag: str = SANDBOX_IMAGE) -> tuple[bool, str]:
    """(ok, message): is the sandbox image `tag` present and built from the current sandbox/ sources?"""
    try:
        if client is None:
            with closing(docker_client()) as own:
                image = get_image(own, tag)
        else:
            image = get_image(client, tag)
        current = image is not None and is_current(image)
    except EnvironmentUnavailable as e:
        return False, str(e)
    build = "patcher image build" + (f" --python {tag.rpartition('-py')[2]}" if tag != SANDBOX_IMAGE else "")
    if image is None:
        return False, f"{tag} is missing: run `{build}`"
    labels = image.labels or {}
    if not current:
        return False, f"{tag} is older than the sandbox/ sources: run `{build}`"
    return True, (f"{tag} ({_short(image.id)}, base {labels.get(BASE_LABEL, '?')}, Python "
                  f"{labels.get(PYTHON_LABEL, '?')}) matches the sandbox/ sources")


def is_current(image: Image) -> bool:
    """Whether a sandbox image holds the current sandbox/ sources (and says which Python it has)."""
    labels = image.labels or {}
    return bool(labels.get(PYTHON_LABEL)) and labels.get(SOURCES_LABEL) == _sources_digest(_context_files(),
                                                                                            SANDBOX_UID)


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
    digest = hashlib.sha256(f"uid={uid}\nsetup_uid={SETUP_UID}\n".encode())
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


def _build(client: docker.DockerClient, files: list[tuple[str, Path]], base: str, tag: str,
           labels: dict[str, str], log: Log) -> str:
    tail: list[str] = []
    try:
        stream = client.api.build(
            fileobj=_context_tar(files), custom_context=True, dockerfile="Dockerfile.sandbox",
            tag=tag, buildargs={"BASE": base, "UID": str(SANDBOX_UID), "SETUP_UID": str(SETUP_UID)}, labels=labels,
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
        return client.images.get(tag).id
    except DOCKER_ERRORS as e:
        last = "\n".join(f"  {line}" for line in tail)
        raise EnvironmentUnavailable(f"building {tag} from {base} failed ({first_line(e)}): fix "
                                     f"the cause and rerun `patcher image build`\n{last}".rstrip()) from e


def _resolve_base(client: docker.DockerClient, base: str | None, python: str, log: Log) -> str:
    """The base asked for; else python:X.Y-slim when present or pullable; else the offline base of X.Y."""
    offline = base is not None and base.startswith(offline_tag(""))
    if base is not None and not offline:
        if _present_or_pulled(client, base, log):
            return base
        raise EnvironmentUnavailable(f"base image {base} is neither present nor pullable: load it with "
                                     "`docker load`, or omit --base to use an offline Debian base")
    if base is None and _present_or_pulled(client, f"python:{python}-slim", log):
        return f"python:{python}-slim"
    suite = base.removeprefix(offline_tag("")) if base else OFFLINE_SUITES.get(python)
    if suite is None:
        offline_versions = ", ".join(f"{v} ({s})" for v, s in OFFLINE_SUITES.items())
        raise EnvironmentUnavailable(f"no registry answered (python:{python}-slim) and no Debian release patcher "
                                     f"builds offline ships Python {python}: offline, only {offline_versions}")
    if get_image(client, offline_tag(suite)) is None:
        build_offline_base(client, log, suite)
    return offline_tag(suite)


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
