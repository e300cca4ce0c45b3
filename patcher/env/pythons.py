"""The Python a job's boxes run, and the sandbox image made for it (pyversion.py reads what a repository
declares and chooses; image.py builds the images).

The versions this machine can have: with a registry, REGISTRY_PYTHONS (`python:X.Y-slim`); offline (the
default sandbox image was built on an offline Debian base), the releases of OFFLINE_SUITES; and any version
whose sandbox image is already here. A repository that declares nothing runs on the configured image as it
is. An image that is missing, or older than the sandbox/ sources, is built once, under a lock (an offline
base takes a minute or more, and root for debootstrap); one that cannot be built is `setup_failed`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from patcher.config import DEFAULT_PYTHON, PYTHON_LABEL, SANDBOX_IMAGE, patcher_home
from patcher.env.cache import locked
from patcher.env.debian_base import apt_mirror, offline_tag, suite_served
from patcher.env.image import BASE_LABEL, build_image, is_current, python_of, sandbox_tag
from patcher.env.pyversion import (
    OFFLINE_SUITES,
    REGISTRY_PYTHONS,
    choose,
    fallbacks,
    read_declared,
    version_key,
)
from patcher.errors import EnvironmentUnavailable, SetupFailed
from patcher.sandbox import get_image

Log = Callable[[str], None]


@dataclass(frozen=True)
class PythonChoice:
    """The interpreter a job's boxes run: `provenance.python` and the trace's `environment` event."""

    version: str
    """X.Y.Z of the image's python3 (X.Y when the image does not say)."""
    image: str
    source: str
    """Where the choice came from: --python, the crash's Python (X.Y, from …), [tool.patcher] python,
    .python-version, requires-python (file), tested (files), default; `next after X.Y, …` for a fallback."""
    declared: dict[str, Any] = field(default_factory=dict)
    tried: tuple[dict[str, str], ...] = ()
    """The versions tried before this one, each with why it was left ({version, image, source, left})."""

    def as_json(self) -> dict[str, Any]:
        return {"version": self.version, "image": self.image, "source": self.source,
                **({"declared": self.declared} if self.declared else {}),
                **({"tried": list(self.tried)} if self.tried else {})}

    def left(self, why: str) -> dict[str, str]:
        """This choice as an entry of the next one's `tried`."""
        return {"version": self.version, "image": self.image, "source": self.source, "left": why}


@dataclass(frozen=True)
class PythonPlan:
    """The Pythons a job may run, best first: the choice, then the fallbacks (pyversion.fallbacks)."""

    choices: list[tuple[str, str]]
    """(X.Y, why) of each, in the order they are tried."""
    declared: dict[str, Any]
    default: str
    """The configured image's X.Y."""
    full: str
    """The configured image's X.Y.Z."""
    image: str

    def realize(self, client: docker.DockerClient, n: int, log: Log) -> PythonChoice:
        """The `n`th choice with its sandbox image, built when missing (the configured image for its version)."""
        version, why = self.choices[n]
        if version == self.default:
            return PythonChoice(self.full or self.default, self.image, why, self.declared)
        tag = ensure_python_image(client, version, f"{why}: Python {version}", log)
        built = get_image(client, tag)
        return PythonChoice((built.labels or {}).get(PYTHON_LABEL, version) if built else version, tag, why,
                            self.declared)


def python_plan(client: docker.DockerClient, tree: Path, requested: str | None, requested_from: str, image: str,
                crash: tuple[str, str] | None) -> PythonPlan:
    """The Pythons for the repository at `tree` (`requested`: --python or [tool.patcher] python; `crash`: the
    Python the crash ran on, and where that was read); `image` is the configured one, kept when its Python is
    the one chosen. No image is built here (PythonPlan.realize builds one when it is reached)."""
    declared = read_declared(tree)
    configured = get_image(client, image)
    if configured is None:
        raise EnvironmentUnavailable(f"sandbox image {image} is missing: run `patcher image build`")
    full = python_of(client, configured)
    default = ".".join(full.split(".")[:2]) or DEFAULT_PYTHON
    versions = available(client, configured, default)
    first, source = choose(declared, versions, default, requested, requested_from, crash)
    later = [(v, f"next after {first}, which was left ({source})") for v in fallbacks(first, source, declared,
                                                                                     versions)]
    return PythonPlan([(first, source), *later], declared.as_json(), default, full, image)


def available(client: docker.DockerClient, configured: Any, default: str) -> list[str]:
    """The versions a job may ask for here: those a registry or the Debian mirror gives, and those built."""
    labels = configured.labels or {}
    offline = (labels.get(BASE_LABEL) or "").startswith(offline_tag(""))
    versions = {default, *(OFFLINE_SUITES if offline else REGISTRY_PYTHONS)}
    versions |= {v for v in {*REGISTRY_PYTHONS, *OFFLINE_SUITES} if get_image(client, sandbox_tag(v)) is not None}
    return sorted(versions, key=version_key)


def ensure_python_image(client: docker.DockerClient, version: str, why: str, log: Log) -> str:
    """The current sandbox image of Python `version`, built when missing or stale; SetupFailed when it cannot be."""
    tag = sandbox_tag(version)
    image = get_image(client, tag)
    if image is not None and is_current(image):
        return tag
    home = patcher_home()
    home.mkdir(parents=True, exist_ok=True)
    with locked(home / f"python-{version}.lock"):
        try:
            log(f"building {tag} for Python {version} (once; an offline base takes a minute or more)")
            return build_image(None, log, python=version)
        except SetupFailed:
            raise
        except EnvironmentUnavailable as e:
            raise SetupFailed(f"{why} needs the sandbox image {tag}, which could not be built: {e}") from e


def python_lines(client: docker.DockerClient) -> list[str]:
    """`patcher doctor`: the Python of each sandbox image here, and the versions this machine can have."""
    lines = []
    for version in sorted({DEFAULT_PYTHON, *REGISTRY_PYTHONS, *OFFLINE_SUITES}, key=version_key):
        image = get_image(client, sandbox_tag(version))
        if image is not None:
            state = "current" if is_current(image) else "older than the sandbox/ sources"
            lines.append(f"{(image.labels or {}).get(PYTHON_LABEL, version)} in {sandbox_tag(version)} ({state})")
    default = get_image(client, SANDBOX_IMAGE)
    if default is None or not ((default.labels or {}).get(BASE_LABEL) or "").startswith(offline_tag("")):
        return [*lines, f"with the registry: python:X.Y-slim for {', '.join(REGISTRY_PYTHONS)}"]
    mirror, offline = apt_mirror(), []
    for version, suite in OFFLINE_SUITES.items():
        if get_image(client, offline_tag(suite)) is not None:
            offline.append(f"{version} ({suite}, base built)")
        elif suite_served(mirror, suite):
            offline.append(f"{version} ({suite}, `patcher image build --python {version}` as root, about a minute)")
        else:
            offline.append(f"not {version} ({mirror} does not serve {suite})")
    return [*lines, f"offline, from Debian: {', '.join(offline)}; no other version"]
