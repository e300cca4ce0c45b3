"""The service's own access to a private git remote (git's smart-HTTP backend behind a token check): the
token is used for that origin only, through patcher's credential helper, and shows up nowhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.intake import CloneLimits, stage_repo
from patcher.intake.access import GitAccess
from patcher.server.settings import load_settings

from .helpers import git, make_repo
from .private_servers import GitHandler, basic, serving, url_of

TOKEN = "tok-" + os.urandom(12).hex()


def _remote(tmp_path: Path) -> Path:
    src = make_repo(tmp_path / "src", {"a.py": "a = 1\n"})
    git(tmp_path, "clone", "-q", "--bare", str(src), str(tmp_path / "srv" / "r.git"))
    return tmp_path / "srv"


def _tokens(tmp_path: Path, text: str, mode: int = 0o600) -> GitAccess:
    path = tmp_path / "git-tokens"
    path.write_text(text)
    path.chmod(mode)
    return GitAccess(tokens_file=path)


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_private_remote_is_cloned_with_the_services_token_and_keeps_none_of_it(tmp_path: Path) -> None:
    root = _remote(tmp_path)
    with serving(GitHandler, root=str(root), auth=basic("ci-bot", TOKEN)) as server:
        access = _tokens(tmp_path, f"{url_of(server)} ci-bot:{TOKEN}\nhttps://other.example x\n")
        staged = stage_repo(url_of(server, "/r.git"), clone=CloneLimits(timeout_s=60, access=access))
        try:
            assert (staged.path / "a.py").read_text() == "a = 1\n"
            assert TOKEN.encode() not in _all_bytes(staged.path.parent)  # the clone, its .git, the staging copy
        finally:
            staged.cleanup()
    assert server.seen[0] == "" and basic("ci-bot", TOKEN) in server.seen  # sent after the challenge only


def test_a_wrong_token_is_bad_input_naming_the_origin_and_the_setting(tmp_path: Path) -> None:
    root = _remote(tmp_path)
    with serving(GitHandler, root=str(root), auth=basic("ci-bot", TOKEN)) as server:
        access = _tokens(tmp_path, f"{url_of(server)} ci-bot:wrong-{TOKEN}\n")
        with pytest.raises(BadInput) as e:
            stage_repo(url_of(server, "/r.git"), clone=CloneLimits(timeout_s=60, access=access))
        assert f"{url_of(server)} refused access" in str(e.value)
        assert f"check the token for {url_of(server)} in PATCHER_GIT_TOKENS_FILE" in str(e.value)
        assert TOKEN not in str(e.value)
        with pytest.raises(BadInput, match=f"no token for {url_of(server)} is configured"):
            stage_repo(url_of(server, "/r.git"), clone=CloneLimits(timeout_s=60, access=GitAccess()))


def test_a_redirect_to_another_host_gets_no_token(tmp_path: Path) -> None:
    root = _remote(tmp_path)
    with serving(GitHandler, root=str(root), auth=basic("ci-bot", TOKEN)) as other:
        elsewhere = url_of(other).replace("127.0.0.1", "localhost")  # another origin, the same repository
        with serving(GitHandler, redirect=elsewhere) as first:
            access = _tokens(tmp_path, f"{url_of(first)} ci-bot:{TOKEN}\n")
            with pytest.raises(BadInput, match="refused access"):
                stage_repo(url_of(first, "/r.git"), clone=CloneLimits(timeout_s=60, access=access))
    assert other.seen and not any(other.seen), "the token went to a host it is not configured for"


def test_a_remote_echoing_the_token_is_redacted(tmp_path: Path) -> None:
    with serving(GitHandler, auth=basic("ci-bot", TOKEN), echo=f"token {TOKEN} is revoked") as server:
        access = _tokens(tmp_path, f"{url_of(server)} ci-bot:{TOKEN}\n")
        with pytest.raises(BadInput) as e:
            stage_repo(url_of(server, "/r.git"), clone=CloneLimits(timeout_s=60, access=access))
    assert "token [REDACTED] is revoked" in str(e.value) and TOKEN not in str(e.value)


def test_a_tokens_file_others_can_read_is_refused(tmp_path: Path) -> None:
    access = _tokens(tmp_path, f"https://git.example {TOKEN}\n", mode=0o644)
    with pytest.raises(BadInput, match=r"PATCHER_GIT_TOKENS_FILE: .* readable by no one else"):
        access.check()
    with pytest.raises(BadInput, match="line 1"):
        _tokens(tmp_path, f"git.example {TOKEN}\n").check()


def test_ssh_remotes_get_the_pinned_key_and_known_hosts_only(tmp_path: Path) -> None:
    key, known = tmp_path / "id", tmp_path / "known_hosts"
    key.write_text("key\n")
    key.chmod(0o600)
    known.write_text("git.example ssh-ed25519 AAAA\n")
    access = GitAccess(ssh_key=key, known_hosts=known)
    access.check()
    ssh = access.session("git@git.example:o/r.git", []).env["GIT_SSH_COMMAND"]
    for part in (f"-i {key}", "IdentitiesOnly=yes", f"UserKnownHostsFile={known}", "StrictHostKeyChecking=yes",
                 "BatchMode=yes", "-F /dev/null", "IdentityAgent=none"):
        assert part in ssh
    assert access.session("https://git.example/o/r.git", []).env == {}
    with pytest.raises(BadInput, match="go together"):
        GitAccess(ssh_key=key).check()


def test_the_cli_ends_a_refused_clone_with_exit_2_and_no_token_anywhere(tmp_path: Path) -> None:
    root = _remote(tmp_path)
    tb = tmp_path / "tb.txt"
    tb.write_text('Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nZeroDivisionError: x\n')
    with serving(GitHandler, root=str(root), auth=basic("ci-bot", TOKEN)) as server:
        access = _tokens(tmp_path, f"{url_of(server)} ci-bot:{TOKEN}-old\n")
        env = {**os.environ, "PATCHER_HOME": str(tmp_path / "home"), "PATCHER_GIT_TOKENS_FILE": str(access.tokens_file)}
        argv = [str(Path(sys.executable).parent / "patcher"), "fix", url_of(server, "/r.git"), "--traceback", str(tb),
                "--engine", "offline", "--test", "python -c 1", "--json"]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    result = json.loads(out.stdout)
    assert result["reason"] == "bad_input" and "PATCHER_GIT_TOKENS_FILE" in result["message"]
    trace = Path(result["trace"]).read_text()
    assert TOKEN not in out.stdout + out.stderr + trace + _all_bytes(tmp_path / "home").decode(errors="replace")


def test_the_server_refuses_an_unsafe_tokens_file_and_doctor_shows_origins_not_tokens(tmp_path: Path) -> None:
    access = _tokens(tmp_path, f"https://git.example.com {TOKEN}\n", mode=0o640)
    with pytest.raises(BadInput, match=r"server settings: PATCHER_GIT_TOKENS_FILE: .*\(chmod 600"):
        load_settings(dev=True, home=tmp_path, git_tokens_file=access.tokens_file)
    assert access.tokens_file is not None
    access.tokens_file.chmod(0o600)
    assert load_settings(dev=True, home=tmp_path, git_tokens_file=access.tokens_file).git_access() == access
    env = {**os.environ, "PATCHER_GIT_TOKENS_FILE": str(access.tokens_file), "DOCKER_HOST": "unix:///nonexistent"}
    out = subprocess.run([str(Path(sys.executable).parent / "patcher"), "doctor"], env=env, capture_output=True,
                         text=True, timeout=120)
    line = next(x for x in out.stdout.splitlines() if "git credentials" in x)
    assert line.startswith("ok") and "https://git.example.com" in line and TOKEN not in out.stdout + out.stderr
