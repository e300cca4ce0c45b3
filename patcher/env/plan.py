"""What a repo needs installed: the plan read from its dependency files, its key, and the setup script.

Nothing here runs the repo's code; the files are only read (pyproject.toml, setup.cfg, setup.py as text,
requirements*.txt). The key hashes everything the setup step can read: the dependency files, the setup
command, the base image id and RECIPE, and, when the setup step reads the repo itself (a setup command,
an installable project whose build code runs, a requirement naming a local path), the repo's content.
So code can never reach an image that a job on other code reuses (a setup.py that drops a `.pth` into
the environment poisons only its own content's image); a repo whose setup reads only requirement files
gets just those files in its setup container and shares the image across code edits.
"""

from __future__ import annotations

import configparser
import hashlib
import shlex
import tomllib
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECIPE = "2"
"""Bumped whenever the setup script changes what an environment image holds."""
VENV = "/opt/patcher-env"
DEFAULT_INDEX = "https://pypi.org/simple"
SETUP_DIR = "/workspace/.patcher-setup"


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
    reads_repo: bool = False
    """Whether the setup step reads the repo beyond `files` (so the repo's content is part of the key)."""


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
    plan.reads_repo = bool(setup_command) or plan.installable or any(
        _local(line, files) for name in plan.requirements for line in files[name].decode(errors="replace").splitlines())
    return plan


def _local(line: str, files: dict[str, bytes]) -> bool:
    """Whether a requirements line reads something other than the index: a path, a file: URL, an editable,
    a find-links directory, or a nested requirements/constraints file the plan does not carry."""
    text = line.split(" #", 1)[0].strip()
    if not text or text.startswith("#"):
        return False
    option, _, value = text.replace("=", " ", 1).partition(" ")
    if option in ("-r", "--requirement", "-c", "--constraint"):
        value = value.strip()
        return value not in files and f"requirements/{value}" not in files
    if option in ("-i", "--index-url", "--extra-index-url", "--trusted-host", "--pre", "--prefer-binary"):
        return "file:" in value
    return text.startswith(("-", ".", "/", "~")) or "file:" in text or "\\" in text


def env_key(plan: EnvPlan, base_id: str, repo_content: str | None = None, indexes: list[str] | None = None) -> str:
    """Hash of everything the setup step can read: dependency files, setup command, base image, recipe,
    the package indexes (URLs without credentials: another password for one index is the same image), and
    (when the plan reads the repo) `repo_content`, an id of the whole staged tree."""
    if plan.reads_repo and not repo_content:
        raise ValueError("this plan reads the repo: its key needs the repo's content id")
    repo = repo_content if plan.reads_repo else None
    # PyPI alone (the default) adds nothing, so keys made before indexes counted stay valid.
    index = f"indexes={indexes!r}\n" if indexes and indexes != [DEFAULT_INDEX] else ""
    digest = hashlib.sha256(f"recipe={RECIPE}\nbase={base_id}\nsetup={plan.setup_command!r}\nrepo={repo}\n{index}"
                            .encode())
    for name in sorted(plan.files):
        digest.update(f"{name}\n{len(plan.files[name])}\n".encode() + plan.files[name])
    return digest.hexdigest()


def setup_script(plan: EnvPlan) -> str:
    pip = f"{VENV}/bin/python -m pip install"
    lines = ["set -eu", f"export PIP_CONFIG_FILE={SETUP_DIR}/pip.conf PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1 "
             "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off PIP_ROOT_USER_ACTION=ignore",
             f"python3 {SETUP_DIR}/forward.py",  # the way to the host's proxy; it forks into the background
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
