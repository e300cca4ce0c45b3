"""Index credentials stay on the host: the egress proxy adds them for that index's host and port only
(a redirect elsewhere, or any other host, gets none, whatever the client sends), and the environment
image's key counts the index URL, not its password."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

from patcher.env.egress import EgressProxy
from patcher.env.pip import index_credentials, scrub
from patcher.env.plan import detect, env_key

from .helpers import make_repo
from .private_servers import (
    IndexHandler,
    basic,
    build_wheel,
    outward_address,
    serving,
    serving_tls,
    tls_files,
    url_of,
)


def _get(proxy: EgressProxy, url: str, extra: str = "") -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(proxy.socket_dir / "proxy.sock"))
        sock.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_the_proxy_adds_the_credentials_for_that_index_only(tmp_path: Path) -> None:
    build_wheel(tmp_path, "private-dep", "1.0", "SIZE = 10\n")
    host = outward_address()
    with serving(IndexHandler, host=host, root=str(tmp_path)) as files, \
            serving(IndexHandler, host=host, root=str(tmp_path), auth=basic("ci", "pw-1234567"),
                    redirect=url_of(files)) as index:
        indexes = [url_of(index, "/simple").replace("http://", "http://ci:pw-1234567@")]
        allowed = {host: {index.server_address[1], files.server_address[1]}}
        with EgressProxy(allowed, index_credentials(indexes)) as proxy:
            assert b"private_dep-1.0" in _get(proxy, url_of(index, "/simple/private-dep/"))
            redirected = _get(proxy, url_of(index, "/files/private_dep-1.0-py3-none-any.whl"))
            assert redirected.startswith(b"HTTP/1.0 302")
            assert _get(proxy, url_of(files, "/files/private_dep-1.0-py3-none-any.whl"),
                        "Authorization: Basic Y2k6Zm9yZ2Vk\r\n").startswith(b"HTTP/1.0 200")
    assert index.seen == [basic("ci", "pw-1234567")] * 2
    assert files.seen == [""], "the redirect's host got credentials"


def test_the_environment_key_counts_the_index_url_and_not_its_password(tmp_path: Path) -> None:
    plan = detect(make_repo(tmp_path / "r", {"requirements.txt": "private-dep\n"}), None, [])
    assert plan is not None

    def key(url: str) -> str:
        return env_key(plan, "sha256:base", None, [scrub(url)])

    assert key("https://ci:one@idx.example/simple") == key("https://ci:two@idx.example/simple")
    assert key("https://ci:one@idx.example/simple") != key("https://ci:one@other.example/simple")
    assert key("https://pypi.org/simple") == env_key(plan, "sha256:base")  # PyPI alone keys as before


def test_an_https_index_gets_its_credentials_through_the_proxys_own_tls(tmp_path: Path) -> None:
    build_wheel(tmp_path, "private-dep", "1.0", "SIZE = 10\n")
    host = outward_address()
    ca, cert, key = tls_files(tmp_path, host)
    with serving_tls(IndexHandler, host, cert, key, root=str(tmp_path), auth=basic("ci", "pw-1234567")) as index:
        port = index.server_address[1]
        creds = index_credentials([f"https://ci:pw-1234567@{host}:{port}/simple"])
        with EgressProxy({host: {port}}, creds, ca.read_bytes()) as proxy:
            trust = ssl.create_default_context(cadata=proxy.ca_pem.decode())
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(str(proxy.socket_dir / "proxy.sock"))
                sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert sock.recv(100).startswith(b"HTTP/1.1 200")
                with trust.wrap_socket(sock, server_hostname=host) as tls:
                    tls.sendall(f"GET /simple/private-dep/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                    answer = b""
                    while chunk := tls.recv(65536):
                        answer += chunk
    assert answer.startswith(b"HTTP/1.0 200") and b"private_dep-1.0" in answer
    assert index.seen == [basic("ci", "pw-1234567")]
