"""The setup step reaches only the package index: its container has no network, and the host's proxy lets
through the configured index hosts only. Real Docker, a real setup container running a probe as its
setup command, a real listener on the host; the installer's log tail comes back redacted."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import docker
import pytest

from patcher.env import EnvConfig, ensure_env_image
from patcher.env.egress import EgressProxy, allowlist
from patcher.errors import SetupFailed
from patcher.intake import stage_repo
from tests.support.helpers import make_repo
from tests.support.netns import TestHost

PROBE = """\
import socket
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close(); return "open"
    except OSError as e:
        return type(e).__name__
def via_proxy(target):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    return s.recv(100).split(b"\\r\\n")[0].decode()
print("direct-host-port", connect("TEST_HOST", HOST_PORT))
print("direct-private", connect("TEST_HOST", 80))
print("proxy-index", via_proxy("pypi.org:443"))
for target in ("example.com:443", "169.254.169.254:80", "127.0.0.1:HOST_PORT", "TEST_HOST:HOST_PORT",
               "pypi.org:22"):
    print("proxy", target, via_proxy(target))
print("leak https://ci:s3cr3t-index-pass@pypi.example/simple")
raise SystemExit(1)
"""


@pytest.mark.docker
def test_the_setup_step_reaches_the_index_and_nothing_else(tmp_path: Path, docker_client: docker.DockerClient,
                                                          sandbox_image: str, test_host: TestHost) -> None:
    """The probe's targets are loopback and the session's test host (a private address the proxy and this
    host reach: the listener answers here), never another address: the proxy refuses the metadata
    service by the allowlist, before any connection."""
    with test_host.run(socket.socket) as listener:
        listener.bind((test_host.address, 0))
        listener.listen()
        port = listener.getsockname()[1]
        socket.create_connection((test_host.address, port), timeout=5).close()  # reachable from the host
        probe = PROBE.replace("HOST_PORT", str(port)).replace("TEST_HOST", test_host.address)
        repo = make_repo(tmp_path / "r", {"probe.py": probe, "a.py": ""})
        staged = stage_repo(str(repo))
        config = EnvConfig(repository="patcher-env-test", home=tmp_path / "home", setup_timeout_s=120)
        try:
            with pytest.raises(SetupFailed) as e:
                ensure_env_image(staged, "python3 probe.py", config, docker_client, print)
        finally:
            staged.cleanup()
    out = str(e.value)
    lines = dict(line.strip().split(" ", 1) for line in out.splitlines() if line.strip().startswith(
        ("direct-", "proxy-index")))
    assert lines["direct-host-port"] == lines["direct-private"] == "OSError", out
    assert lines["proxy-index"] == "HTTP/1.1 200 Connection established", out
    for target in ("example.com:443", "169.254.169.254:80", f"127.0.0.1:{port}", f"{test_host.address}:{port}",
                   "pypi.org:22"):
        assert f"proxy {target} HTTP/1.1 403 Forbidden" in out, out
    assert "s3cr3t-index-pass" not in out and "https://[REDACTED]@pypi.example" in out
    assert "the proxy refused: CONNECT example.com:443" in out


def test_the_proxy_refuses_what_is_not_allowlisted_and_loopback_always(tmp_path: Path) -> None:
    """Host side alone, over its Unix socket (forwarding itself is what the setup tests install through)."""
    origin = subprocess.Popen(["python3", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert origin.stdout is not None
        port = int(origin.stdout.readline().split("port ")[1].split()[0])
        (tmp_path / "simple.html").write_text("index page")
        assert allowlist(["https://pypi.org/simple", "http://mirror.example:8080/s"]) == {
            "pypi.org": {443}, "files.pythonhosted.org": {443}, "mirror.example": {8080}}
        with EgressProxy({"localhost": {port}}) as proxy:
            assert proxy.address("localhost", port) is None, "loopback is never a destination"
            assert proxy.address("example.com", 443) is None
        with EgressProxy({"pypi.org": {443}}) as proxy:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(str(proxy.socket_dir / "proxy.sock"))
                sock.sendall(f"GET http://127.0.0.1:{port}/simple.html HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert sock.recv(100).startswith(b"HTTP/1.1 403")
            assert proxy.refused == [f"GET http://127.0.0.1:{port}/simple.html"]
    finally:
        origin.kill()
        origin.wait()
        if origin.stdout is not None:
            origin.stdout.close()
