"""The offline base images: a Debian release made with debootstrap from the host's apt mirror.

Used when no registry answers (so `FROM python:…` cannot be pulled). Each release ships one python3
(bullseye 3.9, bookworm 3.11, trixie 3.13: pythons.py picks the release for a version). The root
filesystem is streamed as a tar into `docker import`, without apt caches, docs or device nodes, labelled
with the Python it holds, and kept as `patcher-base:<release>` for later builds. Needs root and debootstrap.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import requests

from patcher.config import LABEL, OFFLINE_BASE_IMAGE, PYTHON_LABEL
from patcher.errors import EnvironmentUnavailable

DEBIAN_SUITE = OFFLINE_BASE_IMAGE.rpartition(":")[2]
"""The release of the default offline base (its python3 is the default Python)."""
DEBOOTSTRAP_INCLUDE = "python3,python3-venv,python3-pip,python3-pytest,git,ripgrep,ca-certificates"
FALLBACK_MIRROR = "http://deb.debian.org/debian"
ROOTFS_EXCLUDES = ("./dev/*", "./proc/*", "./sys/*", "./run/*", "./tmp/*", "./var/cache/apt/*",
                   "./var/lib/apt/lists/*", "./usr/share/doc/*", "./usr/share/man/*",
                   "./usr/share/info/*", "./usr/share/locale/*")
IMPORT_CHANGES = [f"LABEL {LABEL}=1", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                  'CMD ["/bin/bash"]']
PROBE_TIMEOUT_S = 5.0


def offline_tag(suite: str) -> str:
    return f"patcher-base:{suite}"


def build_offline_base(client: docker.DockerClient, log: Callable[[str], None], suite: str = DEBIAN_SUITE) -> str:
    """Debootstrap a minimal `suite` with Python, git, ripgrep and pytest; import it; return its tag."""
    if shutil.which("debootstrap") is None:
        raise EnvironmentUnavailable("no registry answered and debootstrap is missing: install it "
                                     "(`apt-get install -y debootstrap`) or run scripts/setup.sh")
    if os.geteuid() != 0:
        raise EnvironmentUnavailable("no registry answered and building the offline base needs root "
                                     "(debootstrap): run `patcher image build` once as root")
    mirror = apt_mirror(suite=suite)
    tag = offline_tag(suite)
    log(f"no registry answered; building an offline base from Debian {suite} packages (about a minute, {mirror})")
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="patcher-rootfs-", dir="/var/tmp"))
    try:
        cmd = ["debootstrap", "--variant=minbase", f"--include={DEBOOTSTRAP_INCLUDE}", suite, str(root), mirror]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        if done.returncode != 0:
            last = "\n".join(f"  {line}" for line in done.stdout.splitlines()[-12:])
            served = "" if suite_served(mirror, suite) else f" (the mirror does not serve {suite})"
            raise EnvironmentUnavailable(f"debootstrap of {suite} from {mirror} failed (exit {done.returncode})"
                                         f"{served}: check that the mirror answers, then rerun `patcher image "
                                         f"build`\n{last}")
        _import_rootfs(client, root, tag, _python_version(root))
    finally:
        _remove_rootfs(root)
    log(f"imported {tag} in {time.monotonic() - started:.0f} s")
    return tag


def suite_served(mirror: str, suite: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the mirror answers for `suite` (its Release file), without downloading it."""
    try:
        answer = requests.head(f"{mirror.rstrip('/')}/dists/{suite}/Release", timeout=timeout, allow_redirects=True)
    except requests.exceptions.RequestException:
        return False
    return answer.status_code == 200


def _python_version(root: Path) -> str:
    """The full version of the rootfs's python3 (`3.9.2`), read from dpkg's status file; "" when unknown."""
    target = (root / "usr/bin/python3").resolve().name if (root / "usr/bin/python3").is_symlink() else ""
    status = root / "var/lib/dpkg/status"
    package = f"Package: {target}-minimal\n" if target.startswith("python3.") else ""
    text = status.read_text(errors="replace") if package and status.is_file() else ""
    found = re.search(re.escape(package) + r"(?:.+\n)*?Version: (\d+\.\d+\.\d+)", text) if text else None
    return found.group(1) if found else ""


def apt_mirror(sources_dir: Path = Path("/etc/apt/sources.list.d"),
               sources_list: Path = Path("/etc/apt/sources.list"), suite: str = DEBIAN_SUITE) -> str:
    """The host's Debian mirror (first URI of an entry for `suite`, else of any main suite), else the default."""
    found: list[tuple[str, str]] = []
    for path in sorted(sources_dir.glob("*.sources")):
        for stanza in _deb822(path):
            uris = stanza.get("uris", "").split()
            if uris and "deb" in stanza.get("types", "").split() and stanza.get("enabled", "yes") != "no":
                found += [(uris[0], suite) for suite in stanza.get("suites", "").split()]
    for path in [sources_list, *sorted(sources_dir.glob("*.list"))]:
        for line in path.read_text().splitlines() if path.is_file() else []:
            parts = re.sub(r"\[[^\]]*\]", " ", line.split("#")[0]).split()
            if len(parts) >= 3 and parts[0] == "deb":
                found.append((parts[1], parts[2]))
    for uri, listed in found:
        if listed == suite:
            return uri
    for uri, listed in found:
        if "-" not in listed and "security" not in uri and "ubuntu" not in uri:
            return uri
    return FALLBACK_MIRROR


def _deb822(path: Path) -> Iterator[dict[str, str]]:
    for block in re.split(r"\n\s*\n", path.read_text()):
        stanza: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:
                stanza[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                stanza[key] = value.strip()
        yield stanza


def _import_rootfs(client: docker.DockerClient, root: Path, tag: str, python: str) -> None:
    excludes = [f"--exclude={pattern}" for pattern in ROOTFS_EXCLUDES]
    tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", *excludes, "-c", "."],
                           stdout=subprocess.PIPE)
    out = tar.stdout
    assert out is not None

    def chunks() -> Iterator[bytes]:
        while block := out.read(1 << 20):
            yield block

    repository, version = tag.rsplit(":", 1)
    changes = [*IMPORT_CHANGES, *([f"LABEL {PYTHON_LABEL}={python}"] if python else [])]
    try:
        client.api.import_image(src=chunks(), repository=repository, tag=version, changes=changes,
                                stream_src=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise EnvironmentUnavailable(f"docker refused the offline base ({str(e).splitlines()[0]}): check the "
                                     "daemon's log and disk space, then rerun `patcher image build`") from e
    finally:
        out.close()
        code = tar.wait()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound as e:
        raise EnvironmentUnavailable(f"importing the offline base failed (tar exit {code}): check disk "
                                     "space, then rerun `patcher image build`") from e
    if code > 1:
        raise EnvironmentUnavailable(f"reading the offline base's files failed (tar exit {code}): rerun "
                                     "`patcher image build`")


def _remove_rootfs(root: Path) -> None:
    # debootstrap mounts /proc and /sys inside the target; never rmtree through a live mount.
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(f"{root}/")), reverse=True):
        subprocess.run(["umount", "-l", mount], check=False)
    shutil.rmtree(root, ignore_errors=True)
