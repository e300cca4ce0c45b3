"""What a verified result was proved on, for the signed record and the merge gate.

The record binds the content, not just the diff text: `tree` is the git tree of the staged base (the
files as staged, uncommitted changes included) and `result_tree` the tree after the diff is applied to
it. A gate then needs no byte-identical diff: the base commit of a pull request must have `tree` and its
head `result_tree` (diff text differs between git versions and repositories, e.g. in `index` lines).
Also recorded: where the repository came from, the source commit and whether the work tree was dirty,
the reproduction command and where it came from (`user`: --test; `pytest_traceback` or
`unittest_traceback`: the failing test the traceback names; `agent`: a test the diff adds), the suite
command, the image the boxes ran (tag and image id), the Python they ran (version, sandbox image, where the
choice came from), what the environment's setup read and installed, and the patcher version.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import docker
import docker.errors

from patcher import __version__
from patcher.intake import StagedRepo, host_git, open_repo
from patcher.trace import scrub_userinfo
from patcher.verify import Job


def base_provenance(job: Job, repo: str, ref: str | None, user_test: str | None) -> dict[str, Any]:
    """What the job was proved on: `repo` and `ref` as the user named them, `user_test` their --test."""
    image = job.image
    try:
        image_id = job.client.images.get(image).id if job.client else None
    except docker.errors.DockerException:
        image_id = None
    return {**staged_provenance(job.staged, repo, ref), "reproduction": reproduction_of(job.repro, user_test),
            "suite_command": job.suite_command, "image": image, "image_id": image_id,
            "python": job.environment.get("python"), "setup": job.environment.get("setup")}


def reproduction_of(repro: str | None, user_test: str | None) -> dict[str, Any]:
    """The reproduction command and where it came from (user, pytest_traceback, unittest_traceback, agent)."""
    from_tb = "pytest_traceback" if repro and "pytest" in repro.split()[:3] else "unittest_traceback"
    return {"command": repro, "source": "user" if user_test else from_tb if repro else "agent"}


def staged_provenance(staged: StagedRepo | None, repo: str, ref: str | None) -> dict[str, Any]:
    """What any result says of its repository, whatever its ending: `repo` and `ref` as the user named them and,
    once the repository is staged, its source commit, whether the work tree was dirty, and the staged tree."""
    known = {"repo": scrub_userinfo(repo), "ref": ref, "patcher_version": __version__}
    if staged is None:
        return known
    return {**known, "source_commit": staged.source_commit, "dirty": staged.dirty, "tree": staged_tree(staged)}


def staged_tree(staged: StagedRepo) -> str:
    with open_repo(staged.path / ".git") as repo:  # patcher's own staging repo, so GitPython reads the objects
        return str(repo.commit(staged.base_commit).tree.hexsha)


def result_tree(staged: StagedRepo, diff: str) -> str:
    """The tree of the staged base with `diff` applied."""
    return applied_tree(staged.path, staged.base_commit, diff)


def applied_tree(repo: Path, base: str, diff: str) -> str:
    """The tree of `base` with `diff` applied, computed in a scratch index and object directory (the
    repository is left as it is); intake.GitFailed when the diff does not apply."""
    scratch = Path(tempfile.mkdtemp(prefix="patcher-tree-"))
    try:
        patch = scratch / "patch.diff"
        patch.write_text(diff, encoding="utf-8")
        (scratch / "objects").mkdir()
        env = {"GIT_INDEX_FILE": str(scratch / "index"), "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": host_git(repo, "rev-parse", "--path-format=absolute",
                                                        "--git-path", "objects")}
        host_git(repo, "read-tree", base, env=env)
        host_git(repo, "apply", "--cached", "--whitespace=nowarn", str(patch), env=env)
        return host_git(repo, "write-tree", env=env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def with_result(provenance: dict[str, Any] | None, staged: StagedRepo, diff: str) -> dict[str, Any] | None:
    if provenance is None:
        return None
    return {**provenance, "result_tree": result_tree(staged, diff)}



