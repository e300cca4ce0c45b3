"""Environment images on the daemon: listed, their last use kept, the least recently used evicted.

Last use is kept in PATCHER_HOME/envs.json; `prune` evicts the least recently used beyond a size cap,
counting each image's own layer (its size minus the base's, recorded in a label when it was built).
"""

from __future__ import annotations

import calendar
import fcntl
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from patcher.config import patcher_home
from patcher.env.config import EnvConfig

ENV_LABEL = "io.patcher.env"
INPUTS_LABEL = "io.patcher.env.inputs"
BASE_SIZE_LABEL = "io.patcher.env.base-size"
SETUP_LABEL = "io.patcher.env.setup"
"""What the setup read and installed, with where each requirement came from (plan.summary, pip's list)."""


@dataclass
class EnvImage:
    tag: str
    size: int
    created: str
    last_used: float | None
    inputs: dict[str, Any]


def list_env_images(client: docker.DockerClient, config: EnvConfig) -> list[EnvImage]:
    """Environment images of `config.repository`, least recently used first."""
    used = _read_index(config)
    found = []
    # The listing's own summaries, not an inspection of each image (the high-level list does one per image): an
    # image another process removes meanwhile (a concurrent job's prune) must not fail this listing.
    for image in client.api.images(filters={"label": ENV_LABEL}):
        created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(image.get("Created") or 0)))
        for tag in image.get("RepoTags") or []:
            if tag.split(":", 1)[0] != config.repository:
                continue
            labels = image.get("Labels") or {}
            own = int(image.get("Size") or 0) - int(labels.get(BASE_SIZE_LABEL, "0") or 0)
            found.append(EnvImage(tag, own, created, used.get(tag), json.loads(labels.get(INPUTS_LABEL, "{}"))))
    return sorted(found, key=lambda e: (e.last_used or 0.0, e.created))


def table(images: list[EnvImage]) -> str:
    """`patcher image ls`: one line per image, least recently used first."""
    rows = [("TAG", "SIZE", "CREATED", "LAST USED", "INPUTS")]
    for e in images:
        used = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.last_used)) if e.last_used else "-"
        inputs = " ".join([*e.inputs.get("files", []), *([f"setup={e.inputs['setup']!r}"] if e.inputs.get("setup")
                                                          else []), f"base={e.inputs.get('base_id', '?')}"])
        rows.append((e.tag, f"{e.size / 1e6:.1f} MB", e.created[:19].replace("T", " "), used, inputs))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "".join("  ".join([*(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)), r[4]]) + "\n" for r in rows)


def prune(client: docker.DockerClient, config: EnvConfig, max_gb: float | None = None,
          remove_all: bool = False, keep: str | None = None, in_use_s: float | None = None) -> list[str]:
    """Remove environment images, least recently used first, until their sizes sum to at most the cap (an image
    built or used in the last IN_USE_S seconds is kept: a concurrent job may be about to use it)."""
    cap = (config.max_gb if max_gb is None else max_gb) * 1e9
    images = list_env_images(client, config)
    total = sum(e.size for e in images)
    removed = []
    now, recent = time.time(), IN_USE_S if in_use_s is None else in_use_s
    for env in images:
        if env.tag == keep or not (remove_all or total > cap):
            continue
        if not remove_all and now - max(env.last_used or 0.0, _epoch(env.created)) < recent:
            continue  # built or used a moment ago: a concurrent job may be about to open a box on it
        try:
            client.images.remove(env.tag, noprune=False)
        except docker.errors.APIError:
            continue  # a container still uses it
        total -= env.size
        removed.append(env.tag)
    if removed:
        update_index(config, forget=removed)
    return removed


IN_USE_S = 900.0
"""An image built or used this recently is never evicted by the cap (only `--all` removes it): another job may
have just built it and not yet started its container."""


def _epoch(created: str) -> float:
    try:
        return float(calendar.timegm(time.strptime(created[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return 0.0


def env_home(config: EnvConfig) -> Path:
    home = config.home or patcher_home()
    home.mkdir(parents=True, exist_ok=True)
    return home


@contextmanager
def locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def update_index(config: EnvConfig, touch: str | None = None, forget: Sequence[str] = ()) -> None:
    """Record a use of `touch` and drop `forget`, under a lock, replacing the file atomically."""
    with locked(env_home(config) / "envs.lock"):
        used = {t: u for t, u in _read_index(config).items() if t not in forget}
        path = env_home(config) / "envs.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(used | ({touch: time.time()} if touch else {}), indent=1, sort_keys=True))
        os.replace(tmp, path)


def _read_index(config: EnvConfig) -> dict[str, float]:
    try:
        data = json.loads((env_home(config) / "envs.json").read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}
