"""The host git layer (GitPython, hardened): the caller's GIT_* environment is ignored, unsafe transports are
refused before git runs, and patcher imports (and doctor says what to install) where git is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import CloneLimits, open_repo, stage_repo
from patcher.intake.clone import clone_url

from .helpers import git, make_repo


def test_the_callers_git_environment_redirects_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    decoy = make_repo(tmp_path / "decoy", {"d.py": "d = 1\n"})
    for name, value in {"GIT_DIR": decoy / ".git", "GIT_WORK_TREE": decoy, "GIT_INDEX_FILE": tmp_path / "idx",
                        "GIT_OBJECT_DIRECTORY": decoy / ".git" / "objects", "GIT_COMMON_DIR": decoy / ".git"}.items():
        monkeypatch.setenv(name, str(value))
    staged = stage_repo(str(repo))
    try:
        assert staged.files == ["a.py"] and staged.source_commit == git(repo, "rev-parse", "HEAD")
        with open_repo(staged.path / ".git") as opened:
            assert opened.head.commit.hexsha == staged.base_commit
            assert [b.path for b in opened.head.commit.tree.blobs] == ["a.py"]
    finally:
        staged.cleanup()


@pytest.mark.parametrize("url", ["ext::sh -c touch% {marker}", "fd::17", "ext::sh -c 'touch {marker}'"])
def test_unsafe_transports_are_refused_before_git_runs(tmp_path: Path, url: str) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(BadInput, match="cannot check out"):
        clone_url(url.format(marker=marker), None, tmp_path / "c", CloneLimits(timeout_s=20))
    assert not marker.exists()


def test_patcher_imports_and_doctor_names_the_package_where_git_is_missing(tmp_path: Path) -> None:
    make_repo(tmp_path / "r", {"a.py": "a = 1\n"})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("docker", "dockerd"):  # whatever else doctor looks for may be missing too
        if (found := subprocess.run(["which", program], capture_output=True, text=True).stdout.strip()):
            os.symlink(found, bin_dir / program)
    code = ("import patcher.cli, patcher.pipeline, patcher.doctor as d\n"
            "from patcher.errors import EnvironmentUnavailable\nfrom patcher.intake import stage_repo\n"
            "print([c.line() for c in d.host_program_checks() if 'git' in c.name][0])\n"
            "try:\n    stage_repo('.')\nexcept EnvironmentUnavailable as e:\n    print('staging:', e)\n")
    env = {**os.environ, "PATH": str(bin_dir)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path / "r", capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "FAIL  host program git: missing" in out.stdout and "apt-get install -y git" in out.stdout
    assert "staging: host program `git` is missing" in out.stdout
