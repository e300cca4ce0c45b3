"""A verified diff delivered for real: fetched and committed in a repository of patcher's own, pushed over
git's smart HTTP (git http-backend behind a token check) with the service's token file, and a pull request
opened on the scripted forge through the forge's own client (PyGithub, python-gitlab, Gitea's REST API).
Each step happens once however often delivery is tried, and what was not verified is never pushed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from patcher.delivery import Commit, DeliveryConfig, DeliveryRefused, Facts, ForgeError, deliver, forge_for
from patcher.errors import BadInput
from patcher.intake import CloneLimits, GitAccess
from patcher.result import AgentSummary, JobResult
from patcher.testing import ScriptedForge
from tests.support.crashes import fixed, shop_repo, tokens_file
from tests.support.helpers import git
from tests.support.private_servers import GitHandler, Recorder, basic, serving, url_of

TOKEN = "ghs_delivery0123456789abcdef"
API_TOKEN = "forge-api-0123456789abcdef"


@pytest.fixture()
def origin(tmp_path: Path) -> Iterator[tuple[Recorder, str, Path]]:
    """The shop's remote over smart HTTP, needing TOKEN: (server, URL, the work repository it came from)."""
    work, _ = shop_repo(tmp_path / "work")
    root = tmp_path / "remotes"
    root.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "shop.git")], check=True)
    with serving(GitHandler, root=str(root), auth=basic("x-access-token", TOKEN)) as server:
        yield server, url_of(server, "/shop.git"), work


@pytest.fixture()
def forge() -> Iterator[ScriptedForge]:
    with ScriptedForge(token=API_TOKEN) as f:
        yield f


def commit_of(work: Path, job_id: str = "20261202-101010-abcdef01", **changes: str) -> Commit:
    diff, tree, result_tree = fixed(work)
    fields = {"job_id": job_id, "base_commit": git(work, "rev-parse", "HEAD"), "tree": tree,
              "result_tree": result_tree, "diff": diff, "message": "Fix IndexError in page\n\nPatcher-Job: x\n",
              "when": datetime(2026, 12, 2, 10, 10, tzinfo=UTC)} | changes
    return Commit(**fields)  # type: ignore[arg-type]


def facts_of(change: Commit) -> Facts:
    return Facts(job_id=change.job_id, review_link=f"http://patcher.test/jobs/{change.job_id}",
                 record_link=f"http://patcher.test/v1/jobs/{change.job_id}/attestation", status="verified",
                 diff_sha256="ab" * 32, files_changed=["shop/pagination.py"],
                 verification={"reproduction": {"command": "python -m pytest -q tests/test_pagination.py",
                                                "before": "failed", "after": "passed"},
                               "fail_to_pass": ["tests/test_pagination.py::test_last_page"],
                               "pass_to_pass": {"total": 2, "regressions": []}},
                 crash={"title": "IndexError: list index out of range `x` @here",
                        "culprit": "shop/pagination.py in page", "project": "shop", "release": "abc", "count": 3,
                        "first_seen": "2026-12-02T10:00:00", "last_seen": "2026-12-02T10:05:00"})


def setup(tmp_path: Path, origin: str, forge: ScriptedForge, kind: str = "github"
          ) -> tuple[DeliveryConfig, CloneLimits]:
    access = GitAccess(tokens_file=tokens_file(tmp_path / "tokens", {
        origin.rsplit("/", 1)[0]: f"x-access-token:{TOKEN}", forge.base_url: API_TOKEN}))
    config = DeliveryConfig(forge=kind, remote=origin, repository="team/shop",  # type: ignore[arg-type]
                            api_url=forge.api(kind))
    return config, CloneLimits(timeout_s=60, access=access)


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_the_verified_diff_becomes_one_commit_on_its_branch_and_one_pull_request(
        tmp_path: Path, origin: tuple[Recorder, str, Path], forge: ScriptedForge, kind: str) -> None:
    server, url, work = origin
    config, limits = setup(tmp_path, url, forge, kind)
    change = commit_of(work)
    facts = facts_of(change)
    done = deliver(change, facts, config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert done.pushed and server.pushes == 1
    bare = tmp_path / "remotes" / "shop.git"
    head = git(bare, "rev-parse", f"refs/heads/{change.branch}")
    assert head == done.commit and git(bare, "rev-parse", f"{head}^") == change.base_commit
    assert git(bare, "rev-parse", f"{head}^{{tree}}") == change.result_tree
    assert git(bare, "log", "-1", "--format=%an <%ae>%n%B", head).startswith("patcher <patcher@localhost>\nFix")
    [pull] = forge.pulls
    assert (pull["forge"], pull["repository"], pull["head"], pull["base"]) == (kind, "team/shop", change.branch, "main")
    assert pull["title"].startswith("Fix IndexError") and "test_last_page" in pull["body"]
    assert facts.review_link in pull["body"] and facts.record_link in pull["body"]
    assert "`IndexError: list index out of range 'x' @here`" in pull["body"], "crash text stays inside a code span"

    again = deliver(change, facts, config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert (again.commit, again.pushed, again.pull_request) == (done.commit, False, done.pull_request)
    assert server.pushes == 1 and len(forge.pulls) == 1, "a second delivery pushes nothing and opens nothing"


def test_a_forge_that_fails_is_retried_and_a_later_try_does_not_push_again(
        tmp_path: Path, origin: tuple[Recorder, str, Path], forge: ScriptedForge) -> None:
    server, url, work = origin
    config, limits = setup(tmp_path, url, forge)
    change = commit_of(work)
    forge.fail(2, 502)  # transient: tenacity retries through it
    deliver(change, facts_of(change), config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert len(forge.pulls) == 1

    other = commit_of(work, job_id="20261202-101011-abcdef02")
    forge.fail(4, 503)  # as many as delivery's attempts: it gives up
    with pytest.raises(ForgeError, match="503"):
        deliver(other, facts_of(other), config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert server.pushes == 2 and len(forge.pulls) == 1
    done = deliver(other, facts_of(other), config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert not done.pushed and server.pushes == 2 and len(forge.pulls) == 2


def test_a_failed_push_says_why_and_the_next_try_pushes_once(
        tmp_path: Path, origin: tuple[Recorder, str, Path], forge: ScriptedForge) -> None:
    server, url, work = origin
    config, limits = setup(tmp_path, url, forge)
    change = commit_of(work)
    server.options["fail_pushes"] = 1
    with pytest.raises(BadInput, match="cannot push to"):
        deliver(change, facts_of(change), config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert server.pushes == 0 and forge.pulls == []
    done = deliver(change, facts_of(change), config, limits, forge_for(config, url, limits.access.tokens(), 30))
    assert done.pushed and server.pushes == 1 and len(forge.pulls) == 1


def test_without_the_token_the_remote_refuses_and_the_setting_is_named(
        tmp_path: Path, origin: tuple[Recorder, str, Path], forge: ScriptedForge) -> None:
    server, url, work = origin
    config, _ = setup(tmp_path, url, forge)
    limits = CloneLimits(timeout_s=60, access=GitAccess())
    with pytest.raises(BadInput, match="PATCHER_GIT_TOKENS_FILE") as e:
        deliver(commit_of(work), facts_of(commit_of(work)), config, limits, forge_for(config, url, {}, 30))
    assert TOKEN not in str(e.value) and server.pushes == 0


def test_what_was_not_verified_is_never_pushed(
        tmp_path: Path, origin: tuple[Recorder, str, Path], forge: ScriptedForge) -> None:
    server, url, work = origin
    config, limits = setup(tmp_path, url, forge)
    wrong_result = commit_of(work, result_tree="0" * 40)
    with pytest.raises(DeliveryRefused, match="not the verified result"):
        deliver(wrong_result, facts_of(wrong_result), config, limits, forge_for(config, url, {}, 30))
    wrong_base = commit_of(work, tree="1" * 40)
    with pytest.raises(DeliveryRefused, match="not the tree"):
        deliver(wrong_base, facts_of(wrong_base), config, limits, forge_for(config, url, {}, 30))
    assert server.pushes == 0 and forge.pulls == []


def test_what_a_job_delivers_is_read_from_its_result_as_the_store_keeps_it(tmp_path: Path) -> None:
    work, _ = shop_repo(tmp_path / "work")
    diff, tree, result_tree = fixed(work)
    base = git(work, "rev-parse", "HEAD")
    result = JobResult(run_id="r", status="verified", reason="verified", message="fixed", diff=diff,
                       base_commit="staged0", files_changed=["shop/pagination.py"], agent=AgentSummary(rounds=2),
                       provenance={"source_commit": base, "tree": tree, "result_tree": result_tree}, exit_code=0)
    stored = {**result.as_json(), "reverified": {"of": "x"}}  # what a service adds is not the result's
    assert JobResult.from_json(stored) == result
    when = datetime(2026, 12, 2, 10, 10, tzinfo=UTC)
    assert Commit.of("j1", JobResult.from_json(stored), "message", when) == Commit(
        job_id="j1", base_commit=base, tree=tree, result_tree=result_tree, diff=diff, message="message", when=when)
    with pytest.raises(ValueError, match="needs a diff"):
        JobResult.from_json({**stored, "diff": None})
