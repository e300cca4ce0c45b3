"""Environment images: a repo's dependencies installed once, in a setup step, and reused by later jobs.

The setup step is the only one with network access. A container from the sandbox image on the default
bridge (otherwise hardened: the sandbox uid, no capabilities, no-new-privileges, memory, pids and CPU
limits, a deadline) gets the repo at /workspace/repo plus the host's CA bundle and pip settings, installs
into a venv at /opt/patcher-env (with system site packages, so the image's pytest stays) and is committed
as `patcher-env:<hash12>`; the hash covers the dependency files, the setup command, the base image id and
RECIPE. The repo copy and the settings are deleted before the commit. Jobs copy their repo to the same
path, so an editable install (or the .pth written for a bare `src/` layout) sees the agent's edits.
Build code only ever runs in that container, never on the host.

Last use is kept in PATCHER_HOME/envs.json; `prune` evicts the least recently used beyond a size cap,
counting each image's own layer (its size minus the base's).
"""

from __future__ import annotations

import configparser
import fcntl
import hashlib
import io
import json
import os
import shlex
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests
from docker.types import LogConfig, Ulimit
from pydantic import BaseModel, ConfigDict, Field

from .config import LABEL, SANDBOX_IMAGE, SANDBOX_UID
from .errors import EnvironmentUnavailable, SetupFailed
from .intake import StagedRepo
from .sandbox.reaper import OWNER, owner_labels

Log = Callable[[str], None]

RECIPE = "1"
"""Bumped whenever the setup script changes what an environment image holds."""
ENV_LABEL = "io.patcher.env"
INPUTS_LABEL = "io.patcher.env.inputs"
BASE_SIZE_LABEL = "io.patcher.env.base-size"
VENV = "/opt/patcher-env"
SETUP_DIR = "/workspace/.patcher-setup"
PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PIP_KEYS = ("index-url", "extra-index-url", "trusted-host", "cert", "timeout", "proxy")
DEFAULT_CA = Path("/etc/ssl/certs/ca-certificates.crt")
_DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


class EnvConfig(BaseModel):
    """How environment images are built, cached and evicted."""

    model_config = ConfigDict(extra="forbid")

    base_image: str = Field(SANDBOX_IMAGE, description="Image the setup container starts from and jobs build on.")
    repository: str = Field("patcher-env", description="Repository name of environment image tags.")
    max_gb: float = Field(10.0, description="Cap on the summed own size of environment images; LRU beyond it.")
    extras: list[str] = Field(["test", "tests", "testing", "dev"],
                              description="Optional-dependency extras and dependency groups installed when present.")
    setup_timeout_s: float = Field(900.0, description="Deadline of the whole setup step; the container is killed.")
    memory_mb: int = Field(4096, description="Memory limit of the setup container (tmpfs /tmp counts against it).")
    tmp_mb: int = Field(1536, description="Size of the setup container's /tmp tmpfs (build directories).")
    pids: int = Field(512, description="Most processes and threads the setup container may hold.")
    cpus: float = Field(2.0, description="CPU limit of the setup container.")
    index_url: str | None = Field(None, description="Package index; None: the host's pip setting, else PyPI.")
    extra_index_urls: list[str] | None = Field(None, description="Extra indexes; None: the host's (http(s) only).")
    trusted_hosts: list[str] | None = Field(None, description="pip trusted hosts; None: the host's pip setting.")
    ca_bundle: Path | None = Field(None, description="CA bundle for the intercepted TLS; None: the host's pip "
                                                     "cert, REQUESTS_CA_BUNDLE, SSL_CERT_FILE, then Debian's.")
    home: Path | None = Field(None, description="Where the last-use index lives; None: PATCHER_HOME.")


@dataclass
class EnvPlan:
    """What a repo needs installed, read from its staging copy (never executed on the host)."""

    files: dict[str, bytes]
    requirements: list[str] = field(default_factory=list)
    installable: bool = False
    extras: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    """Plain requirement strings of the PEP 735 dependency groups named in `extras` (this pip has no --group)."""
    src_layout: bool = False
    setup_command: str | None = None


@dataclass
class EnvImage:
    tag: str
    size: int
    created: str
    last_used: float | None
    inputs: dict[str, Any]


def detect(repo: Path, setup_command: str | None, extras: list[str]) -> EnvPlan | None:
    """The plan for `repo`, or None when there is nothing to install (the sandbox image is enough)."""
    names = ["pyproject.toml", "setup.cfg", "setup.py"]
    names += sorted(p.name for p in repo.glob("requirements*.txt"))
    names += sorted(f"requirements/{p.name}" for p in repo.glob("requirements/*.txt"))
    inside = [n for n in names if (repo / n).is_file() and (repo / n).resolve().is_relative_to(repo.resolve())]
    files = {n: (repo / n).read_bytes() for n in inside}
    plan = EnvPlan(files, setup_command=setup_command, src_layout=(repo / "src").is_dir())
    plan.requirements = [n for n in files if n.startswith("requirements")]
    project: dict[str, Any] = {}
    if "pyproject.toml" in files:
        with suppress(tomllib.TOMLDecodeError, UnicodeDecodeError):
            project = tomllib.loads(files["pyproject.toml"].decode())
    cfg = configparser.RawConfigParser()
    with suppress(configparser.Error, UnicodeDecodeError):
        cfg.read_string(files.get("setup.cfg", b"").decode())
    plan.installable = "setup.py" in files or "project" in project or "build-system" in project or (
        cfg.has_section("metadata") or cfg.has_section("options"))
    declared = set(project.get("project", {}).get("optional-dependencies", {}))
    if cfg.has_section("options.extras_require"):
        declared |= set(cfg.options("options.extras_require"))
    setup_py = files.get("setup.py", b"").decode(errors="replace")
    declared |= {e for e in extras if f'"{e}"' in setup_py or f"'{e}'" in setup_py}
    plan.extras = [e for e in extras if e in declared]
    groups = project.get("dependency-groups", {})
    plan.groups = [r for g in extras for r in groups.get(g, []) if isinstance(r, str)]
    # An installable project with no dependencies in a flat layout imports from the repo root as it is.
    needs_deps = bool(project.get("project", {}).get("dependencies")) or plan.extras or "setup.py" in files or (
        cfg.has_option("options", "install_requires")) or plan.src_layout
    if not (setup_command or plan.requirements or plan.groups or (plan.installable and needs_deps)):
        return None
    return plan


def env_key(plan: EnvPlan, base_id: str) -> str:
    """Hash of everything the environment is made from: dependency files, setup command, base image, recipe."""
    digest = hashlib.sha256(f"recipe={RECIPE}\nbase={base_id}\nsetup={plan.setup_command!r}\n".encode())
    for name in sorted(plan.files):
        digest.update(f"{name}\n{len(plan.files[name])}\n".encode() + plan.files[name])
    return digest.hexdigest()


def ensure_env_image(staged: StagedRepo, setup_command: str | None, config: EnvConfig,
                     client: docker.DockerClient, log: Log) -> str:
    """The image tag jobs on this repo start from: the sandbox image, a cached environment image, or a new one."""
    plan = detect(staged.path, setup_command, config.extras)
    if plan is None:
        return config.base_image
    base = _image(client, config.base_image)
    if base is None:
        raise EnvironmentUnavailable(f"sandbox image {config.base_image} is missing: run `patcher image build`")
    key = env_key(plan, base.id)
    tag = f"{config.repository}:{key[:12]}"
    with _locked(_home(config) / f"env-{key[:12]}.lock"):
        cached = _image(client, tag) is not None
        if not cached:
            log(f"installing dependencies ({', '.join(plan.files) or 'setup command'}) into {tag}")
            started = time.monotonic()
            _build(client, staged, plan, base, tag, key, config)
            log(f"built {tag} in {time.monotonic() - started:.1f} s")
        _update_index(config, touch=tag)
    if not cached:
        prune(client, config, keep=tag)
    return tag


def setup_script(plan: EnvPlan) -> str:
    pip = f"{VENV}/bin/python -m pip install"
    lines = ["set -eu", f"export PIP_CONFIG_FILE={SETUP_DIR}/pip.conf PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1 "
             "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off PIP_ROOT_USER_ACTION=ignore",
             f"python3 -m venv --without-pip --system-site-packages {VENV}",
             f"for p in pip pip3; do printf '#!/bin/sh\\nexec {VENV}/bin/python -m pip \"$@\"\\n' > {VENV}/bin/$p; "
             f"chmod 755 {VENV}/bin/$p; done", "cd /workspace/repo"]
    if plan.setup_command:
        lines.append(plan.setup_command)
    else:
        args = [a for r in plan.requirements for a in ("-r", r)]
        if plan.groups:
            args += ["-r", f"{SETUP_DIR}/groups.txt"]
        if plan.installable:
            args += ["-e", f".[{','.join(plan.extras)}]" if plan.extras else "."]
        lines.append(f"{pip} {shlex.join(args)}")
    if plan.src_layout and (plan.setup_command or not plan.installable):
        lines.append(f"{VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])' "
                     "| { read d; echo /workspace/repo/src > \"$d/_patcher_repo_src.pth\"; }")
    lines.append(f"cd / && rm -rf /workspace/repo {SETUP_DIR}")
    return "\n".join(lines) + "\n"


def list_env_images(client: docker.DockerClient, config: EnvConfig) -> list[EnvImage]:
    """Environment images of `config.repository`, least recently used first."""
    used = _read_index(config)
    found = []
    for image in client.images.list(filters={"label": ENV_LABEL}):
        for tag in image.tags:
            if tag.split(":", 1)[0] != config.repository:
                continue
            labels = image.labels or {}
            own = image.attrs["Size"] - int(labels.get(BASE_SIZE_LABEL, "0") or 0)
            found.append(EnvImage(tag, own, image.attrs["Created"], used.get(tag),
                                  json.loads(labels.get(INPUTS_LABEL, "{}"))))
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
          remove_all: bool = False, keep: str | None = None) -> list[str]:
    """Remove environment images, least recently used first, until their sizes sum to at most the cap."""
    cap = (config.max_gb if max_gb is None else max_gb) * 1e9
    images = list_env_images(client, config)
    total = sum(e.size for e in images)
    removed = []
    for env in images:
        if env.tag == keep or not (remove_all or total > cap):
            continue
        try:
            client.images.remove(env.tag, noprune=False)
        except docker.errors.APIError:
            continue  # a container still uses it
        total -= env.size
        removed.append(env.tag)
    if removed:
        _update_index(config, forget=removed)
    return removed


def _build(client: docker.DockerClient, staged: StagedRepo, plan: EnvPlan, base: Any, tag: str, key: str,
           config: EnvConfig) -> None:
    container = None
    try:
        container = client.containers.create(
            image=base.id, command=["sh", f"{SETUP_DIR}/setup.sh"], user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            network_mode="bridge", cap_drop=["ALL"], security_opt=["no-new-privileges"], init=True,
            pids_limit=config.pids, mem_limit=f"{config.memory_mb}m", memswap_limit=f"{config.memory_mb}m",
            nano_cpus=int(config.cpus * 1e9), tmpfs={"/tmp": f"size={config.tmp_mb}m,nosuid,nodev"},
            ulimits=[Ulimit(name="nofile", soft=4096, hard=4096), Ulimit(name="core", soft=0, hard=0)],
            log_config=LogConfig(type="json-file", config={"max-size": "2m", "max-file": "1"}),
            labels=owner_labels(), working_dir="/workspace", use_config_proxy=False,
            environment={"HOME": "/tmp", "LANG": "C.UTF-8", "PATH": PATH, "VIRTUAL_ENV": VENV})
        container.put_archive("/", _setup_tar(staged, plan, config))
        container.start()
        try:
            code = container.wait(timeout=config.setup_timeout_s)["StatusCode"]
        except requests.exceptions.RequestException as e:
            container.kill()
            raise SetupFailed(f"dependency setup did not finish within {config.setup_timeout_s:.0f} s; last "
                              f"lines of its output:\n{_tail(container)}") from e
        if code != 0:
            raise SetupFailed(f"dependency setup failed (exit code {code}); last lines of the installer's "
                              f"output:\n{_tail(container)}")
        inputs = {"files": sorted(plan.files), "setup": plan.setup_command, "extras": plan.extras,
                  "base": config.base_image, "base_id": base.id.removeprefix("sha256:")[:12]}
        labels = {LABEL: "1", ENV_LABEL: key, INPUTS_LABEL: json.dumps(inputs), OWNER: "",
                  BASE_SIZE_LABEL: str(base.attrs["Size"])}
        repo, _, version = tag.rpartition(":")
        container.commit(repository=repo, tag=version, conf={"Labels": labels, "Cmd": ["python3"]})
    except _DOCKER_ERRORS as e:
        raise EnvironmentUnavailable(f"the Docker daemon failed during dependency setup: {e}") from e
    finally:
        if container is not None:
            with suppress(*_DOCKER_ERRORS):
                container.remove(force=True)


def _setup_tar(staged: StagedRepo, plan: EnvPlan, config: EnvConfig) -> bytes:
    """The repo at workspace/repo and the setup files, all owned by the sandbox uid (so it can delete them)."""
    skip = {f"workspace/repo/{rel}" for rel in staged.outside_links}

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name in skip or not (info.isfile() or info.isdir() or info.issym()):
            return None
        info.uid = info.gid = SANDBOX_UID
        info.uname = info.gname = ""
        info.mode |= 0o700 if info.isdir() else 0o600
        return info

    pip_conf, ca = _pip_settings(config)
    extra = {"setup.sh": setup_script(plan).encode(), "pip.conf": pip_conf.encode(), "ca.pem": ca}
    if plan.groups:
        extra["groups.txt"] = "".join(f"{r}\n" for r in plan.groups).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(staged.path), arcname="workspace/repo", filter=owned)
        for name in (VENV.lstrip("/"), SETUP_DIR.lstrip("/")):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, SANDBOX_UID, SANDBOX_UID
            tar.addfile(info)
        for name, data in extra.items():
            info = tarfile.TarInfo(f"{SETUP_DIR.lstrip('/')}/{name}")
            info.size, info.mode, info.uid, info.gid = len(data), 0o600, SANDBOX_UID, SANDBOX_UID
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _pip_settings(config: EnvConfig) -> tuple[str, bytes]:
    """(pip.conf for the setup container, CA bundle): the host's pip settings that make sense in a container."""
    host = _host_pip()
    values = {k: v for k, v in host.items() if k in ("timeout", "proxy", "index-url")}
    if config.index_url:
        values["index-url"] = config.index_url
    for key, override in (("extra-index-url", config.extra_index_urls), ("trusted-host", config.trusted_hosts)):
        items = [i for i in (host.get(key, "").split() if override is None else override)
                 if not i.startswith("file:")]  # file:// indexes are the host's paths
        if items:
            values[key] = " ".join(items)
    candidates = [config.ca_bundle, host.get("cert"), os.environ.get("REQUESTS_CA_BUNDLE"),
                  os.environ.get("SSL_CERT_FILE"), DEFAULT_CA]
    ca = next((Path(c) for c in candidates if c and Path(c).is_file()), None)
    if ca:
        values["cert"] = f"{SETUP_DIR}/ca.pem"
    text = "[global]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    return text, ca.read_bytes() if ca else b""


def _host_pip() -> dict[str, str]:
    parser = configparser.RawConfigParser()
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    files = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in dirs),
             Path.home() / ".pip" / "pip.conf", Path.home() / ".config" / "pip" / "pip.conf"]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    with suppress(configparser.Error):
        parser.read([f for f in files if f.is_file()])
    values = {}
    for section in ("global", "install"):
        if parser.has_section(section):
            values.update({k: v for k, v in parser.items(section) if k in PIP_KEYS})
    for key in PIP_KEYS:
        value = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if value:
            values[key] = value
    return values


def _tail(container: Any, lines: int = 20) -> str:
    with suppress(*_DOCKER_ERRORS):
        text = container.logs(stdout=True, stderr=True, tail=lines).decode(errors="replace")
        return "\n".join(f"  {line[:200]}" for line in text.rstrip().splitlines())
    return "  (no output could be read)"


def _image(client: docker.DockerClient, ref: str) -> Any:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _home(config: EnvConfig) -> Path:
    home = config.home or Path(os.environ.get("PATCHER_HOME") or Path.home() / ".patcher")
    home.mkdir(parents=True, exist_ok=True)
    return home


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _read_index(config: EnvConfig) -> dict[str, float]:
    try:
        data = json.loads((_home(config) / "envs.json").read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _update_index(config: EnvConfig, touch: str | None = None, forget: Sequence[str] = ()) -> None:
    """Record a use of `touch` and drop `forget`, under a lock, replacing the file atomically."""
    with _locked(_home(config) / "envs.lock"):
        used = {t: u for t, u in _read_index(config).items() if t not in forget}
        path = _home(config) / "envs.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(used | ({touch: time.time()} if touch else {}), indent=1, sort_keys=True))
        os.replace(tmp, path)
