"""The verified diff as one commit: the deployed commit fetched from the remote, the diff applied to its tree
in an index of patcher's own (no work tree, nothing of the repository's runs), the result checked against
the trees the record binds, and the commit written with a date of the job's (so the same job always makes
the same commit, and a retry recognises it on the remote); then pushed as `patcher/<job id>`, never forced.

    DeliveryRefused   the commit cannot be what was verified (another base tree, another result): no push
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from patcher.errors import BadInput
from patcher.intake import CloneLimits, GitFailed, fetch_commit, host_git, push_branch, remote_branch
from patcher.result import JobResult


class DeliveryRefused(BadInput):
    """What would be pushed is not what was verified; nothing is pushed."""


@dataclass(frozen=True)
class Commit:
    """The one commit a job delivers, as its record binds it."""

    job_id: str
    base_commit: str
    """The deployed commit the diff was verified on (the record's source_commit)."""
    tree: str | None
    """The tree verified on (the record's tree); None for a record without one."""
    result_tree: str
    """The tree with the diff applied (the record's result_tree): the pushed commit's tree, exactly."""
    diff: str
    message: str
    when: datetime
    """The commit's date (when the job was verified)."""

    @property
    def branch(self) -> str:
        return f"patcher/{self.job_id}"

    @classmethod
    def of(cls, job_id: str, result: JobResult, message: str, when: datetime) -> Commit:
        """What the verified `result` of a job delivers: its diff on the commit and trees its provenance binds."""
        bound = result.provenance or {}
        return cls(job_id=job_id, base_commit=str(bound.get("source_commit") or result.base_commit or ""),
                   tree=bound.get("tree"), result_tree=str(bound.get("result_tree") or ""), diff=result.diff or "",
                   message=message, when=when)


def write_commit(git_dir: Path, commit: Commit, author: str) -> str:
    """`commit` written on its base in `git_dir` (which holds the base); DeliveryRefused when its trees
    are not the record's."""
    name, _, email = author.partition(" <")
    date = commit.when.isoformat()
    env = {"GIT_DIR": str(git_dir), "GIT_INDEX_FILE": str(git_dir / "patcher-delivery-index"),
           "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"), "GIT_COMMITTER_DATE": date}
    cwd = git_dir.parent
    base_tree = host_git(cwd, "rev-parse", f"{commit.base_commit}^{{tree}}", env=env).strip()
    if commit.tree and base_tree != commit.tree:
        raise DeliveryRefused(f"the deployed commit {commit.base_commit[:12]} has tree {base_tree[:12]}, not the "
                              f"tree {commit.tree[:12]} the diff was verified on (were files left out of staging, "
                              "such as submodules?)")
    patch = git_dir / "patcher-delivery.diff"
    patch.write_text(commit.diff)
    message = git_dir / "patcher-delivery-message"
    message.write_text(commit.message)
    host_git(cwd, "read-tree", commit.base_commit, env=env)
    try:
        host_git(cwd, "apply", "--cached", "--binary", "--whitespace=nowarn", str(patch), env=env)
    except GitFailed as e:
        raise DeliveryRefused(f"the verified diff does not apply to {commit.base_commit[:12]}: "
                              f"{e.stderr.strip()[-300:]}") from e
    tree = host_git(cwd, "write-tree", env=env).strip()
    if tree != commit.result_tree:
        raise DeliveryRefused(f"the diff applied gives tree {tree[:12]}, not the verified result "
                              f"{commit.result_tree[:12]}")
    return host_git(cwd, "commit-tree", tree, "-p", commit.base_commit, "-F", str(message), env=env).strip()


@dataclass(frozen=True)
class Pushed:
    commit: str
    pushed: bool
    """False when the remote already had the branch at this commit (an earlier try pushed it)."""


def push_commit(remote: str, commit: Commit, author: str, limits: CloneLimits) -> Pushed:
    """`commit` made and pushed to `remote` as its branch, pushed at most once: a branch already there at the same
    commit is taken as pushed; at another commit it is refused (someone else's work is never overwritten)."""
    work = Path(tempfile.mkdtemp(prefix="patcher-deliver-"))
    try:
        git_dir = fetch_commit(remote, commit.base_commit, work / "repo", limits)
        sha = write_commit(git_dir, commit, author)
        there = remote_branch(remote, commit.branch, limits)
        if there == sha:
            return Pushed(sha, pushed=False)
        if there is not None:
            raise DeliveryRefused(f"{remote} already has a branch {commit.branch} at {there[:12]}, not at the "
                                  f"verified commit {sha[:12]}; delete it to deliver again")
        push_branch(git_dir, remote, sha, commit.branch, limits)
        return Pushed(sha, pushed=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
