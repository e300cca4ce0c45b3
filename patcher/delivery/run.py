"""One delivery, step by step and each step at most once: the commit pushed (skipped when an earlier try
pushed it: the branch is on the remote at the same commit), then the pull request (the one already there,
or a new one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from patcher.delivery.branch import Commit, push_commit
from patcher.delivery.config import DeliveryConfig
from patcher.delivery.forges import Forge, PullRequest, open_pull_request
from patcher.delivery.message import Facts, pr_body, pr_title
from patcher.intake import CloneLimits


@dataclass(frozen=True)
class Delivered:
    commit: str
    pushed: bool
    """Whether this try pushed (False: the branch was already there)."""
    pull_request: PullRequest


def deliver(commit: Commit, facts: Facts, config: DeliveryConfig, limits: CloneLimits, forge: Forge,
            on_pushed: Callable[[str], None] = lambda _: None) -> Delivered:
    """The commit on its branch and a pull request for it; `on_pushed(sha)` once the branch is there."""
    assert config.remote is not None
    done = push_commit(config.remote, commit, config.author, limits)
    on_pushed(done.commit)
    pull = open_pull_request(forge, commit.branch, config.base, pr_title(facts), pr_body(facts), config.draft)
    return Delivered(done.commit, done.pushed, pull)
