"""Environment images: a repo's dependencies installed once, in a setup step, and reused by later jobs.

    detect(repo) -> EnvPlan      plan.py: what to install, its key, the setup script
    pip_settings(config)         pip.py: the host's pip settings and CA bundle for the container
    ensure_env_image(...)        here: a cached image, or a setup container run and committed
    list / prune                 cache.py: last use in PATCHER_HOME/envs.json, LRU eviction

The setup step is the only one that reaches out, and only to the package index: its container has no
network (otherwise hardened: the setup uid, not the boxes' (seal.py says why), no capabilities,
no-new-privileges, memory, pids and CPU limits, a deadline) and a Unix socket to the host's allowlisting
proxy (egress.py), which lets through the configured index hosts only. It gets the repo at /workspace/repo
(or only its dependency files, see plan.py) plus the host's CA bundle and pip settings (index credentials
stay on the host), installs into a venv at /opt/patcher-env (with system site packages, so the image's
pytest stays) and is committed, once seal.py has taken away what others could write, as
`patcher-env:<hash12>`; the hash covers the dependency files, the setup command, the base image id and
RECIPE. The repo copy and the settings are deleted before the commit. Jobs copy their repo to the same
path, so an editable install (or the .pth written for a bare `src/` layout) sees the agent's edits.
Build code only ever runs in that container, never on the host.
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import docker
import docker.errors
import requests

from patcher.config import LABEL, PYTHON_LABEL, SANDBOX_UID, SETUP_UID
from patcher.env import editable, retry
from patcher.env.cache import (
    BASE_SIZE_LABEL,
    ENV_LABEL,
    INPUTS_LABEL,
    SETUP_LABEL,
    env_home,
    locked,
    prune,
    update_index,
)
from patcher.env.config import EnvConfig
from patcher.env.egress import FORWARDER, PORT_IN_BOX, SOCKET_DIR_IN_BOX, EgressProxy, allowlist
from patcher.env.failure import explain
from patcher.env.image import BASE_LABEL
from patcher.env.pip import index_credentials, index_secrets, pip_settings, scrub
from patcher.env.plan import INSTALLED_MARK, LOOSE_FILE, SETUP_DIR, VENV, EnvPlan, detect, env_key, setup_script
from patcher.env.plugins import CHECK, SCRIPT_NAME, describe, dropped_in
from patcher.env.retry import retried_in
from patcher.env.seal import seal
from patcher.env.symptoms import setup_symptom
from patcher.errors import EnvironmentUnavailable, SetupFailed
from patcher.intake import StagedRepo
from patcher.sandbox import DOCKER_ERRORS, OWNER, get_image, hardened, owner_labels
from patcher.trace import Redactor

Log = Callable[[str], None]

PROXY_ENV = {f"{k}_proxy": f"http://127.0.0.1:{PORT_IN_BOX}" for k in ("http", "https", "HTTP", "HTTPS")}
OVERRIDE = "to set the repository up another way, pass --setup \"CMD\" (or [tool.patcher] setup in pyproject.toml)"
PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def ensure_env_image(staged: StagedRepo, setup_command: str | None, config: EnvConfig,
                     client: docker.DockerClient, log: Log) -> str:
    """The image tag jobs on this repo start from: the sandbox image, a cached environment image, or a new one."""
    plan = detect(staged.path, setup_command, config.extras)
    if plan is None:
        return config.base_image
    base = get_image(client, config.base_image)
    if base is None:
        raise EnvironmentUnavailable(f"sandbox image {config.base_image} is missing: run `patcher image build`")
    pip = pip_settings(config)
    # The staging commit is a function of the content alone; the indexes count without their credentials.
    key = env_key(plan, base.id, staged.base_commit, [scrub(url) for url in pip[2]])
    tag = f"{config.repository}:{key[:12]}"
    with locked(env_home(config) / f"env-{key[:12]}.lock"):
        cached = get_image(client, tag) is not None
        if not cached:
            log(f"installing dependencies ({', '.join(plan.read) or plan.setup_command or 'the project'}) into {tag}")
            started = time.monotonic()
            dropped = _build(client, staged, plan, base, tag, key, config, pip)
            if dropped:
                log(f"dropped from {tag}: {describe(dropped)}")
            log(f"built {tag} in {time.monotonic() - started:.1f} s")
        update_index(config, touch=tag)
    if not cached:
        prune(client, config, keep=tag)
    return tag


def _build(client: docker.DockerClient, staged: StagedRepo, plan: EnvPlan, base: Any, tag: str, key: str,
           config: EnvConfig, pip: tuple[str, bytes, list[str]]) -> list[dict[str, Any]]:
    pip_conf, ca, indexes = pip
    hosts = allowlist([*indexes, *config.egress_urls])
    with EgressProxy(hosts, index_credentials(indexes), ca) as proxy:
        if proxy.ca_pem and "\ncert = " not in pip_conf:
            pip_conf += f"cert = {SETUP_DIR}/ca.pem\n"
        return _run_setup(client, staged, plan, base, tag, key, config, (pip_conf, ca + b"\n" + proxy.ca_pem), proxy,
                   Redactor([*indexes, *index_secrets(indexes)]), [scrub(url) for url in indexes])


def _run_setup(client: docker.DockerClient, staged: StagedRepo, plan: EnvPlan, base: Any, tag: str, key: str,
               config: EnvConfig, pip: tuple[str, bytes], proxy: EgressProxy, redact: Redactor,
               indexes: list[str]) -> list[dict[str, Any]]:
    """Runs the setup and commits the image; returns the pytest plugins it uninstalled (plugins.py)."""
    container = None
    environment = {"HOME": "/tmp", "LANG": "C.UTF-8", "PATH": PATH, "VIRTUAL_ENV": VENV, **PROXY_ENV}
    try:
        container = client.containers.create(**hardened(
            image=base.id, command=["sh", f"{SETUP_DIR}/setup.sh"], uid=SETUP_UID, memory_mb=config.memory_mb,
            cpus=config.cpus, pids=config.pids, tmp_mb=config.tmp_mb, nofile=4096, log_max="2m",
            labels=owner_labels(), working_dir="/workspace",
            volumes={str(proxy.socket_dir): {"bind": SOCKET_DIR_IN_BOX, "mode": "ro"}},
            environment=environment,
            # the install writes the venv into the root filesystem, which is then committed as the image
            read_only=False,
            # the daemon's default IPC namespace, as the setup step has always had (a private one would do)
            private_ipc=False))
        container.put_archive("/", _setup_tar(staged, plan, pip))
        container.start()
        try:
            code = container.wait(timeout=config.setup_timeout_s)["StatusCode"]
        except requests.exceptions.RequestException as e:
            container.kill()
            raise SetupFailed(f"dependency setup did not finish within {config.setup_timeout_s:.0f} s; last "
                              f"lines of its output:\n{_tail(container, redact)}") from e
        if code != 0:
            refused = f"\n  (the proxy refused: {', '.join(proxy.refused[:5])})" if proxy.refused else ""
            output = _logs(container, redact, 400)
            why = explain(output, plan, indexes, proxy.answers)
            raise SetupFailed(f"dependency setup failed (exit code {code}){f': {why}' if why else ''}; {OVERRIDE}; "
                              f"last lines of the installer's output:\n{_tail(container, redact)}"
                              f"{redact.text(refused)}", setup_symptom(output),
                              {**plan.summary(), **_ran(plan, output)})
        inputs = {"files": sorted(plan.files), "setup": plan.setup_command, "extras": plan.extras,
                  "base": config.base_image, "base_id": base.id.removeprefix("sha256:")[:12],
                  "repo": staged.base_commit[:12] if plan.reads_repo else None}
        inherited = {k: v for k, v in (base.labels or {}).items() if k in (PYTHON_LABEL, BASE_LABEL)}
        tail = _logs(container, redact, 60)
        installed = next((line.split()[1:] for line in reversed(tail.splitlines())
                          if line.startswith(INSTALLED_MARK)), None)
        dropped = dropped_in(tail, plan.origins)
        labels = {**inherited, LABEL: "1", ENV_LABEL: key, INPUTS_LABEL: json.dumps(inputs), OWNER: "",
                  BASE_SIZE_LABEL: str(base.attrs["Size"]),
                  SETUP_LABEL: json.dumps({**plan.summary(), **_ran(plan, tail), "installed": installed,
                                           "dropped": dropped})}
        sealed = seal(client, container.commit(conf={"Labels": {OWNER: ""}}).id, config, environment)
        try:
            repo, _, version = tag.rpartition(":")
            sealed.commit(repository=repo, tag=version, conf={"Labels": labels, "Cmd": ["python3"],
                                                              "User": f"{SANDBOX_UID}:{SANDBOX_UID}"})
        finally:
            with suppress(*DOCKER_ERRORS):
                sealed.remove(force=True)
        return dropped
    except DOCKER_ERRORS as e:
        raise EnvironmentUnavailable(f"the Docker daemon failed during dependency setup: {e}") from e
    finally:
        if container is not None:
            with suppress(*DOCKER_ERRORS):
                container.remove(force=True)


def _setup_tar(staged: StagedRepo, plan: EnvPlan, pip: tuple[str, bytes]) -> bytes:
    """The repo at workspace/repo (only its dependency files when the plan reads nothing else: the key covers
    no more) and the setup files, all owned by the setup uid (so it can delete them: /workspace too, which is
    root's in the sandbox image)."""
    skip = {f"workspace/repo/{rel}" for rel in staged.outside_links}

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name in skip or not (info.isfile() or info.isdir() or info.issym()):
            return None
        info.uid = info.gid = SETUP_UID
        info.uname = info.gname = ""
        info.mode |= 0o700 if info.isdir() else 0o600
        return info

    pip_conf, ca = pip
    extra = {"setup.sh": setup_script(plan).encode(), "pip.conf": pip_conf.encode(), "ca.pem": ca,
             "forward.py": FORWARDER.encode(), SCRIPT_NAME: CHECK.encode(),
             editable.SCRIPT_NAME: editable.SCRIPT.encode()}
    if plan.loose:
        extra[LOOSE_FILE] = "".join(f"{req}\n" for req, _ in plan.loose).encode()
    if plan.retries() and not plan.setup_command:
        extra[retry.SCRIPT_NAME], extra[retry.PLAN_NAME] = retry.SCRIPT.encode(), plan.retry_input().encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _add(tar, "workspace", None)
        if plan.reads_repo:
            tar.add(str(staged.path), arcname="workspace/repo", filter=owned)
        else:
            for name, data in {"workspace/repo": None, **{f"workspace/repo/{n}": plan.files[n] for n in plan.files}
                               }.items():
                _add(tar, name, data)
        for name in (VENV.lstrip("/"), SETUP_DIR.lstrip("/")):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, SETUP_UID, SETUP_UID
            tar.addfile(info)
        for name, data in extra.items():
            info = tarfile.TarInfo(f"{SETUP_DIR.lstrip('/')}/{name}")
            info.size, info.mode, info.uid, info.gid = len(data), 0o600, SETUP_UID, SETUP_UID
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes | None) -> None:
    """A directory (data None, parents first) or a file, owned by the setup uid."""
    parent = name.rpartition("/")[0]
    if data is not None and parent not in tar.getnames():
        _add(tar, parent, None)
    info = tarfile.TarInfo(name)
    info.uid = info.gid = SETUP_UID
    if data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
    else:
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))


def _ran(plan: EnvPlan, output: str) -> dict[str, Any]:
    """The setup's commands as they ran (the one pip run, then retry.py's, each with its exit code), and the
    warnings in the user's terms; `output` holds at least the setup's last lines."""
    if plan.setup_command:
        return {"commands": [{"command": plan.setup_command, "why": "--setup or [tool.patcher] setup"}],
                "warnings": []}
    first = {"command": f"pip install {shlex.join(plan.pip_args())}", "why": "everything in one run"}
    again = retried_in(output, plan.loose)
    if again is None:
        return {"commands": [first], "warnings": []}
    return {"commands": [{**first, "exit_code": 1}, *again["steps"]], "warnings": again["warnings"]}


def setup_of(client: docker.DockerClient, image: str) -> dict[str, Any] | None:
    """What an environment image's setup read and installed (`provenance.setup`); None for a sandbox image."""
    found = get_image(client, image)
    label = (found.labels or {}).get(SETUP_LABEL) if found is not None else None
    return {**json.loads(label), "image": image} if label else None


def _tail(container: Any, redact: Redactor, lines: int = 20) -> str:
    """The installer's last lines, redacted (index credentials, URL userinfo, secret-looking variables)."""
    text = _logs(container, redact, lines)
    return "\n".join(f"  {line[:200]}" for line in text.rstrip().splitlines()) or "  (no output could be read)"


def _logs(container: Any, redact: Redactor, lines: int) -> str:
    with suppress(*DOCKER_ERRORS):
        return redact.text(container.logs(stdout=True, stderr=True, tail=lines).decode(errors="replace"))
    return ""
