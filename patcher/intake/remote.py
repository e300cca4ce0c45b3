"""A remote for delivery: one commit fetched from it, a branch looked up on it, a branch pushed to it, each with
the service's own credentials (access.py) and patcher's hardened git (hostgit.py), in a repository of
patcher's own, bounded in time. A remote that refuses says which setting to check; no secret is ever in an
argument, an error or a URL.
"""

from __future__ import annotations

import re
from pathlib import Path

from patcher.errors import BadInput
from patcher.intake.clone import CloneLimits
from patcher.intake.hostgit import GitFailed, host_git, session

HEX = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def fetch_commit(url: str, commit: str, dest: Path, limits: CloneLimits) -> Path:
    """A fresh repository at `dest` holding `commit` of `url` (and nothing older: a depth-1 fetch by id, which
    protocol v2 servers allow); its git dir."""
    if not HEX.fullmatch(commit):
        raise BadInput(f"{commit!r} is not a commit id")
    dest.mkdir(parents=True, exist_ok=True)
    host_git(dest, "init", "--quiet", "--template=", "--initial-branch=delivery")
    git_dir = dest / ".git"
    _remote_git(git_dir, url, limits, "fetch", "fetch", "--quiet", "--no-tags", "--depth=1", url, commit)
    return git_dir


def remote_branch(url: str, branch: str, limits: CloneLimits) -> str | None:
    """The commit `branch` points to on `url`, None when it has no such branch."""
    out = _remote_git(None, url, limits, "look up a branch on", "ls-remote", "--heads", url, f"refs/heads/{branch}")
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}" and HEX.fullmatch(sha.strip()):
            return sha.strip()
    return None


def push_branch(git_dir: Path, url: str, commit: str, branch: str, limits: CloneLimits) -> None:
    """`commit` pushed to `url` as a new branch; never forced, so a branch that exists with other content stays."""
    _remote_git(git_dir, url, limits, "push to", "push", "--quiet", "--no-verify", url,
                f"{commit}:refs/heads/{branch}")


def _remote_git(git_dir: Path | None, url: str, limits: CloneLimits, doing: str, *args: str) -> str:
    pins = [arg for pin in limits.resolve for arg in ("-c", f"http.curloptResolve={pin}")]
    limits.access.check()
    token = session.set(limits.access.session(url, pins))
    cwd = git_dir.parent if git_dir is not None else Path("/")
    try:
        return host_git(cwd, *args, env={"GIT_DIR": str(git_dir)} if git_dir is not None else {},
                        timeout=limits.timeout_s)
    except GitFailed as e:
        said = limits.access.redact((e.stderr.strip().splitlines() or [str(e)])[-1].strip())
        refused = limits.access.refused(url, said, doing)
        raise refused or BadInput(f"cannot {doing} {url}: {said}") from None
    finally:
        session.reset(token)
