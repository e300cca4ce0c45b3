"""A real OpenSSH server on loopback serving git over ssh, for the private-access tests: its own host key,
one authorized client key, nothing of the machine's ssh configuration; stopped when the block ends."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class SshGit:
    root: Path
    port: int
    user: str
    host_key: Path
    """The public host key the server really has."""
    client_key: Path
    """A private key the server accepts."""

    def url(self, path: str) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{self.root}/{path}"

    def known_hosts(self, where: Path, key: Path | None = None) -> Path:
        """A known_hosts file pinning `key` (default: the real host key) for this server."""
        kind, blob = (key or self.host_key).read_text().split()[:2]
        where.write_text(f"[127.0.0.1]:{self.port} {kind} {blob}\n")
        return where


def keypair(where: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(where)], check=True)
    return where


@contextmanager
def ssh_git_server(tmp_path: Path) -> Iterator[SshGit]:
    """sshd on a free loopback port, as the user running the tests, who is the only one it lets in (with the
    returned client key). Skips (fails, when CI=true) without sshd."""
    if not (Path(SSHD).is_file() and shutil.which("ssh-keygen")):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true requires sshd (apt-get install -y openssh-server)")
        pytest.skip("no sshd here: apt-get install -y openssh-server")
    home = tmp_path / "sshd"
    home.mkdir()
    host, client = keypair(home / "host_key"), keypair(home / "client_key")
    (home / "authorized_keys").write_text(Path(f"{client}.pub").read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (home / "config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile none\nUsePAM no\nStrictModes no\n"
        f"AuthorizedKeysFile {home / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nLogLevel ERROR\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory, when run as root
    with subprocess.Popen([SSHD, "-D", "-e", "-f", str(home / "config")], stderr=subprocess.PIPE) as proc:
        try:
            _wait_for(port, proc)
            yield SshGit(tmp_path, port, getpass.getuser(), Path(f"{host}.pub"), client)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd ended: {proc.stderr.read().decode() if proc.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("sshd did not listen within 10 s")
