"""What a repo needs installed: the plan read from its dependency files, its key, and the setup script.

Nothing here runs the repo's code; the files are only read (testreqs.py says where test requirements are
looked for, and in which order). The key hashes everything the setup step can read: the dependency files,
the single requirements, the setup command, the base image id and RECIPE, and, when the setup step reads the
repo itself (a setup command, an installable project whose build code runs, a requirement naming a local
path), the repo's content. So code can never reach an image that a job on other code reuses (a setup.py that
drops a `.pth` into the environment poisons only its own content's image); a repo whose setup reads only
requirement files gets just those files in its setup container and shares the image across code edits.
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

from patcher.env import editable, retry
from patcher.env.plugins import SCRIPT_NAME
from patcher.env.testreqs import find, nested, origins, requirement_name

RECIPE = "8"
"""Bumped whenever the setup script changes what an environment image holds."""
VENV = "/opt/patcher-env"
DEFAULT_INDEX = "https://pypi.org/simple"
SETUP_DIR = "/workspace/.patcher-setup"
LOOSE_FILE = "test-requirements.txt"
"""The single requirements (dependency groups, tests_require, tox deps, nox installs), one a line, in SETUP_DIR."""
PIP_IS_NEW = (f"{VENV}/bin/python -c \"import pip, sys; "
              "sys.exit(tuple(map(int, pip.__version__.split('.')[:2])) < (21, 3))\"")
"""Fails for pip before 21.3 (Debian bullseye's is 20.3), which installs no pyproject-only project editable, and
whose build isolation leaks the image's site-packages into the build: in our `--system-site-packages` venv a
setup.py then runs on the image's setuptools (bullseye's 52), and what its setup_requires pulls in or its
[build-system] asks for is refused (pypa/pip#6264)."""
PIP_UPGRADE_FAILED = "patcher: pip could not be upgraded from the index; the install goes on with the image's pip"
"""Said when the upgrade of an old pip fails and the install goes on with it (all but pyproject-only projects)."""
INSTALLED_MARK = "PATCHER-INSTALLED"
"""Starts the setup's last line: what pip says the environment holds (informational: build code could print it)."""


@dataclass
class EnvPlan:
    """What a repo needs installed, read from its staging copy (never executed on the host)."""

    files: dict[str, bytes]
    """The files the setup container gets when it does not read the repo: metadata and requirement files."""
    requirements: list[str] = field(default_factory=list)
    """Requirement files installed with -r, in the documented order."""
    installable: bool = False
    extras: list[str] = field(default_factory=list)
    loose: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, where it was read), from places that are not requirement files (written to LOOSE_FILE)."""
    src_layout: bool = False
    setup_command: str | None = None
    reads_repo: bool = False
    """Whether the setup step reads the repo beyond `files` (so the repo's content is part of the key)."""
    read: list[str] = field(default_factory=list)
    """Every file that gave something to install, in the order read."""
    origins: dict[str, list[str]] = field(default_factory=dict)
    """Canonical project name -> where it is named: a failing install says where its requirement came from."""
    extra_from: dict[str, str] = field(default_factory=dict)

    def own_args(self) -> list[str]:
        """pip's arguments for the project's own requirements: its requirement files and the project itself."""
        args = [a for r in self.requirements for a in ("-r", r)]
        if self.installable:
            args += ["-e", f".[{','.join(self.extras)}]" if self.extras else "."]
        return args

    def pip_args(self) -> list[str]:
        """pip's arguments for the one run that installs everything (the single requirements from LOOSE_FILE)."""
        own = self.own_args()
        loose = ["-r", f"{SETUP_DIR}/{LOOSE_FILE}"] if self.loose else []
        return [*own[:2 * len(self.requirements)], *loose, *own[2 * len(self.requirements):]]

    def retries(self) -> bool:
        """Whether a failed one run is tried again (retry.py): tox's order, or a setup.py project's era."""
        own = bool(self.own_args())
        return (bool(self.loose) and own) or (self.installable and "setup.py" in self.files)

    def retry_input(self) -> str:
        """retry.py's plan: the pip command, the single requirements, the project's own arguments."""
        return retry.retry_plan([f"{VENV}/bin/python", "-m", "pip", "install"], self.loose, self.own_args(),
                                self.installable and "setup.py" in self.files)

    def summary(self) -> dict[str, Any]:
        """`provenance.setup`: what was read and what the setup installs, each with where it came from."""
        wanted = [{"requirement": f"-r {rel}", "from": rel} for rel in self.requirements]
        if self.installable and not self.setup_command:
            extras = f"[{','.join(self.extras)}]" if self.extras else ""
            froms = sorted({self.extra_from[e] for e in self.extras}) or ["the project's metadata"]
            wanted.append({"requirement": f"-e .{extras}", "from": ", ".join(froms)})
        wanted += [{"requirement": req, "from": where} for req, where in self.loose]
        return {"command": self.setup_command, "files": self.read, "requirements": [] if self.setup_command else wanted}


def detect(repo: Path, setup_command: str | None, extras: list[str]) -> EnvPlan | None:
    """The plan for `repo`, or None when there is nothing to install (the sandbox image is enough). `extras`:
    the words that mark an extra, group, requirements file or nox session as the tests' (EnvConfig.extras)."""
    found = find(repo, extras)
    meta = [n for n in ("pyproject.toml", "setup.cfg", "setup.py")
            if (repo / n).is_file() and (repo / n).resolve().is_relative_to(repo.resolve())]
    shipped, local = _with_nested(repo, found.files)
    files = {n: (repo / n).read_bytes() for n in [*meta, *shipped]}
    plan = EnvPlan(files, found.files, setup_command=setup_command, src_layout=(repo / "src").is_dir(),
                   loose=found.loose, read=found.read, extra_from=dict(found.extras))
    project: dict[str, Any] = {}
    if "pyproject.toml" in files:
        with suppress(tomllib.TOMLDecodeError, UnicodeDecodeError):
            project = tomllib.loads(files["pyproject.toml"].decode())
    cfg = configparser.RawConfigParser()
    with suppress(configparser.Error, UnicodeDecodeError):
        cfg.read_string(files.get("setup.cfg", b"").decode())
    # pip installs a project with a setup.py or a pyproject.toml only (setup.cfg is read by setup.py's setuptools)
    plan.installable = "setup.py" in files or "project" in project or "build-system" in project
    plan.extras = [e for e, _ in found.extras] if plan.installable else []
    # An installable project with no dependencies in a flat layout imports from the repo root as it is.
    needs_deps = bool(project.get("project", {}).get("dependencies")) or plan.extras or "setup.py" in files or (
        cfg.has_option("options", "install_requires")) or plan.src_layout or found.project
    if not (setup_command or plan.requirements or plan.loose or (plan.installable and needs_deps)):
        return None
    plan.origins = origins(found, repo, shipped)
    plan.reads_repo = bool(setup_command) or plan.installable or local or any(
        requirement_name(req) is None or req.startswith((".", "/")) or "file:" in req for req, _ in plan.loose)
    return plan


def _with_nested(repo: Path, files: list[str]) -> tuple[list[str], bool]:
    """The requirement files and those they name with -r/-c (transitively), and whether any names more of the
    repo than those (a path, an editable, a file it does not carry)."""
    shipped, local, todo = list(files), False, list(files)
    while todo:
        more, reads = nested(repo, todo.pop(0))
        local = local or reads
        for rel in more:
            if rel not in shipped:
                shipped.append(rel)
                todo.append(rel)
    return shipped, local


def env_key(plan: EnvPlan, base_id: str, repo_content: str | None = None, indexes: list[str] | None = None) -> str:
    """Hash of everything the setup step can read: dependency files, setup command, base image, recipe,
    the package indexes (URLs without credentials: another password for one index is the same image), and
    (when the plan reads the repo) `repo_content`, an id of the whole staged tree."""
    if plan.reads_repo and not repo_content:
        raise ValueError("this plan reads the repo: its key needs the repo's content id")
    repo = repo_content if plan.reads_repo else None
    # PyPI alone (the default) adds nothing, so keys made before indexes counted stay valid.
    index = f"indexes={indexes!r}\n" if indexes and indexes != [DEFAULT_INDEX] else ""
    loose = [req for req, _ in plan.loose]
    digest = hashlib.sha256(f"recipe={RECIPE}\nbase={base_id}\nsetup={plan.setup_command!r}\nrepo={repo}\n{index}"
                            f"loose={loose!r}\n".encode())
    if plan.retries() and not plan.setup_command:  # what the setup does when its one run fails is part of it
        digest.update(f"retry={hashlib.sha256(retry.SCRIPT.encode()).hexdigest()}\n".encode())
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
    # An old pip is upgraded before anything is installed (any sdist may build): a pyproject-only project cannot
    # be installed editable without it; anything else is tried with the image's pip when the index has no pip.
    upgrade = f"{PIP_IS_NEW} || {pip} -q 'pip>=21.3'"
    tried = f"{upgrade} || echo {shlex.quote(PIP_UPGRADE_FAILED)}"
    if plan.setup_command:
        lines += [tried, plan.setup_command]
    else:
        pyproject_only = plan.installable and "setup.py" not in plan.files
        again = f" || {VENV}/bin/python {SETUP_DIR}/{retry.SCRIPT_NAME} {SETUP_DIR}/{retry.PLAN_NAME}"
        lines += [upgrade if pyproject_only else tried,
                  f"{pip} {shlex.join(plan.pip_args())}{again if plan.retries() else ''}"]
    lines.append(f"{VENV}/bin/python {SETUP_DIR}/{editable.SCRIPT_NAME}")  # ahead of the image's (editable.py)
    lines.append(f"{VENV}/bin/python {SETUP_DIR}/{SCRIPT_NAME}")  # plugins that break pytest (plugins.py)
    lines.append(f"echo \"{INSTALLED_MARK} $({VENV}/bin/python -m pip list --local --exclude-editable "
                 "--format=freeze 2>/dev/null | tr '\\n' ' ')\"")
    if plan.src_layout and (plan.setup_command or not plan.installable):
        lines.append(f"{VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])' "
                     "| { read d; echo /workspace/repo/src > \"$d/_patcher_repo_src.pth\"; }")
    lines.append(f"cd / && rm -rf /workspace/repo {SETUP_DIR}")
    return "\n".join(lines) + "\n"
