"""A private remote that refuses says why and names the setting: a real OpenSSH server (tests/support/sshd.py)
refusing the key, a host key that changed, a host not pinned; the suite's git smart-HTTP server refusing the
token or having no such repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import CloneLimits, stage_repo
from patcher.intake.access import GitAccess
from tests.support.helpers import git, make_repo
from tests.support.private_servers import GitHandler, basic, serving, url_of
from tests.support.sshd import SshGit, keypair, ssh_git_server

TOKEN = "tok-" + os.urandom(12).hex()
TRAILER = "and the repository exists."


def remote(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", {"a.py": "a = 1\n"})
    git(tmp_path, "clone", "-q", "--bare", str(src), str(tmp_path / "srv" / "r.git"))


def clone(url: str, access: GitAccess) -> str:
    """The refusal's message (the clone must fail)."""
    with pytest.raises(BadInput) as refused:
        stage_repo(url, clone=CloneLimits(timeout_s=60, access=access))
    assert TRAILER not in str(refused.value)
    return str(refused.value)


def ssh_access(tmp_path: Path, server: SshGit, key: Path | None = None, pinned: Path | None = None) -> GitAccess:
    known = server.known_hosts(tmp_path / "known_hosts", pinned)
    return GitAccess(ssh_key=key or server.client_key, known_hosts=known)


def test_ssh_the_pinned_key_clones_and_each_refusal_names_what_ssh_answered_and_the_setting(tmp_path: Path) -> None:
    remote(tmp_path)
    with ssh_git_server(tmp_path) as server:
        url = server.url("srv/r.git")
        staged = stage_repo(url, clone=CloneLimits(timeout_s=60, access=ssh_access(tmp_path, server)))
        try:
            assert (staged.path / "a.py").read_text() == "a = 1\n"
        finally:
            staged.cleanup()
        host = f"[127.0.0.1]:{server.port}"
        stranger = keypair(tmp_path / "stranger")
        refused = clone(url, ssh_access(tmp_path, server, key=stranger))
        assert refused == (
            f"cannot clone {url}: the host refused the key PATCHER_GIT_SSH_KEY ({stranger}) (authentication refused) "
            f"(ssh said: {server.user}@127.0.0.1: Permission denied (publickey).); check that the public key of "
            f"PATCHER_GIT_SSH_KEY is authorized for {server.user} on {host}")
        impostor = Path(f"{keypair(tmp_path / 'impostor')}.pub")
        changed = clone(url, ssh_access(tmp_path, server, pinned=impostor))
        assert changed.startswith(
            f"cannot clone {url}: the host's key is not the one PATCHER_GIT_KNOWN_HOSTS ({tmp_path / 'known_hosts'}) "
            f"pins for {host} (a host key mismatch) (ssh said: Host key for {host} has changed and you have requested "
            "strict checking.); "), changed
        assert changed.endswith(f"check that PATCHER_GIT_KNOWN_HOSTS holds the host's current key (`ssh-keyscan -p "
                                f"{server.port} 127.0.0.1`, compared with what its admin says)")
        (tmp_path / "empty").write_text("")
        unknown = clone(url, GitAccess(ssh_key=server.client_key, known_hosts=tmp_path / "empty"))
        assert f"PATCHER_GIT_KNOWN_HOSTS ({tmp_path / 'empty'}) pins no key for {host} (an unknown host)" in unknown
        assert clone(url, GitAccess()).endswith("no host keys are pinned: set PATCHER_GIT_KNOWN_HOSTS (and "
                                                "PATCHER_GIT_SSH_KEY)")


def test_https_a_refused_token_and_a_missing_repository_say_what_the_remote_answered(tmp_path: Path) -> None:
    remote(tmp_path)
    tokens = tmp_path / "tokens"
    with serving(GitHandler, root=str(tmp_path / "srv"), auth=basic("ci-bot", TOKEN)) as server:
        tokens.write_text(f"{url_of(server)} ci-bot:{TOKEN}-old\n")
        tokens.chmod(0o600)
        wrong = clone(url_of(server, "/r.git"), GitAccess(tokens_file=tokens))
        assert wrong.startswith(f"cannot clone {url_of(server, '/r.git')}: {url_of(server)} refused access: it "
                                "refused the credentials (Authentication failed for "), wrong
        assert wrong.endswith(f"check the token for {url_of(server)} in PATCHER_GIT_TOKENS_FILE") and TOKEN not in wrong
        tokens.write_text(f"{url_of(server)} ci-bot:{TOKEN}\n")
        missing = clone(url_of(server, "/gone.git"), GitAccess(tokens_file=tokens))
        assert f"{url_of(server)} refused access: it has no such repository, or the token may not see it" in missing
