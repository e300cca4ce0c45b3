"""The setup step's only way out: an allowlisting HTTP proxy on the host, reached over a Unix socket.

The setup container has no network at all (`network_mode="none"`): no route to the metadata service,
to host ports or to private ranges. Its one exit is a Unix socket bind-mounted from the host, which a
small forwarder inside (FORWARDER, started by the setup script) exposes as `127.0.0.1:3128` for pip's
`proxy` setting. On the host, EgressProxy answers on that socket and lets through only

- `CONNECT host:port` (TLS, end to end) and absolute-form `GET http://host…` requests
- to the configured index hosts and ports (the allowlist: names, so no private range or host port is
  reachable by address), and
- never to a loopback, link-local (the metadata service) or unspecified address, whatever a name
  resolves to, connecting to the address it checked (a DNS answer cannot change in between). An index
  host may resolve to a private address: mirrors often sit inside (this machine's does).

Everything else gets a 403 and is recorded in `refused`. Requests to an index that has credentials get
them here, for that index's host and port only (plain http: added to the request; https: mitm.py).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import selectors
import socket
import socketserver
import ssl
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

from patcher.env.mitm import ProxyCA

PORT_IN_BOX = 3128
SOCKET_DIR_IN_BOX = "/run/patcher-egress"
MAX_HEAD = 16_384
FORWARDER = f"""\
import os, socket, threading
def pipe(a, b):
    try:
        while (data := a.recv(65536)):
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", {PORT_IN_BOX})); srv.listen(64)
if os.fork():
    os._exit(0)
while True:
    c, _ = srv.accept()
    u = socket.socket(socket.AF_UNIX); u.connect("{SOCKET_DIR_IN_BOX}/proxy.sock")
    for a, b in ((c, u), (u, c)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
"""
"""Runs in the setup container: 127.0.0.1:3128 <-> the host's proxy socket (it forks into the background)."""


def allowlist(urls: list[str]) -> dict[str, set[int]]:
    """Host -> ports for these index URLs; PyPI's index also needs its file host."""
    allowed: dict[str, set[int]] = {}
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        allowed.setdefault(parts.hostname.lower(), set()).add(parts.port or (443 if parts.scheme == "https" else 80))
        if parts.hostname.lower() == "pypi.org":
            allowed.setdefault("files.pythonhosted.org", set()).add(443)
    return allowed


class EgressProxy:
    """The host side; `with EgressProxy(allowed) as proxy:` serves on `proxy.socket_dir / "proxy.sock"`."""

    def __init__(self, allowed: dict[str, set[int]], credentials: dict[tuple[str, int], str] | None = None,
                 upstream_ca: bytes = b"") -> None:
        self.allowed = {h.lower(): ports for h, ports in allowed.items()}
        self.credentials = {(h.lower(), port): value for (h, port), value in (credentials or {}).items()}
        """(host, port) -> Authorization value added to the requests for that index only (mitm.py for https)."""
        self.ca = ProxyCA([h for h, _ in self.credentials]) if self.credentials else None
        self._upstream = ssl.create_default_context(cadata=upstream_ca.decode() if upstream_ca else None)
        self.refused: list[str] = []
        self.answers: list[str] = []
        """The indexes' refusals (401, 403) the proxy saw: plain http, and https it adds credentials to."""
        self.socket_dir = Path(tempfile.mkdtemp(prefix="patcher-egress-"))
        self._server: socketserver.ThreadingUnixStreamServer | None = None

    def __enter__(self) -> EgressProxy:
        os.chmod(self.socket_dir, 0o755)
        path = str(self.socket_dir / "proxy.sock")
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._handle(self.request)

        self._server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self._server.daemon_threads = True
        os.chmod(path, 0o777)  # the container's uid connects to it; the directory is read-only to it
        threading.Thread(target=self._server.serve_forever, args=(0.2,), name="patcher-egress", daemon=True).start()
        return self

    @property
    def ca_pem(self) -> bytes:
        """The certificate the setup container trusts for the https indexes the proxy adds credentials to."""
        return self.ca.ca_pem if self.ca else b""

    def __exit__(self, *exc: object) -> None:
        if self.ca is not None:
            self.ca.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with contextlib.suppress(OSError):
            (self.socket_dir / "proxy.sock").unlink()
            self.socket_dir.rmdir()

    def address(self, host: str, port: int) -> tuple[str, int] | None:
        """The address to connect to for host:port, None when the allowlist or the address rules refuse it."""
        host = host.lower().strip("[]")
        if port not in self.allowed.get(host, set()):
            return None
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return None
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast):
                return str(ip), port
        return None

    def _handle(self, client: socket.socket) -> None:
        head = _read_head(client)
        method, target = [*head.split(b" ", 2), b"", b""][:2]
        host, port, rest = _target(method.decode("latin-1"), target.decode("latin-1"))
        where = self.address(host, port) if host else None
        if where is None:
            self.refused.append(f"{method.decode('latin-1')} {target.decode('latin-1')[:200]}")
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        auth = self.credentials.get(((host or "").lower(), port))
        if method == b"CONNECT" and auth and self.ca is not None:
            self._intercept(client, where, (host or "").lower(), auth)
            return
        try:
            upstream = socket.create_connection(where, timeout=30)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        with upstream:
            upstream.settimeout(None)
            if method == b"CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(_origin_form(head, rest, auth))
                client.sendall(self._noted(upstream.recv(65536), f"http://{host}:{port}{rest}", auth))
            _pipe(client, upstream)

    def _intercept(self, client: socket.socket, where: tuple[str, int], host: str, auth: str) -> None:
        """One request over TLS of the proxy's own, sent on with the credentials over verified TLS upstream."""
        assert self.ca is not None
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            with self.ca.server_context(host).wrap_socket(client, server_side=True) as tls:
                head = _read_head(tls)
                target = head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else "/"
                with socket.create_connection(where, timeout=30) as raw, \
                        self._upstream.wrap_socket(raw, server_hostname=host) as upstream:
                    upstream.sendall(_origin_form(head, target if target.startswith("/") else "/", auth))
                    tls.sendall(self._noted(upstream.recv(65536), f"https://{host}:{where[1]}{target}", auth))
                    while data := upstream.recv(65536):
                        tls.sendall(data)
        except (OSError, ssl.SSLError) as e:
            self.refused.append(f"CONNECT {host}:{where[1]} (TLS: {type(e).__name__})")


    def _noted(self, first: bytes, url: str, auth: str | None) -> bytes:
        """The first bytes of an index's answer, passed on; a 401 or 403 is recorded in `answers`."""
        status = first.split(b"\r\n", 1)[0].decode("latin-1", "replace").split(" ", 2)
        if len(status) >= 2 and status[1] in ("401", "403"):
            given = "with the credentials patcher added" if auth else "without credentials (none configured for it)"
            said = f"{status[1]} {status[2][:40]}" if len(status) > 2 else status[1]
            self.answers.append(f"{said} for {url.split('?', 1)[0][:200]} {given}")
        return first


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(30)
    while b"\r\n\r\n" not in data and len(data) < MAX_HEAD:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _target(method: str, target: str) -> tuple[str | None, int, str]:
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return (host or None), int(port) if port.isdigit() else 0, ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        return None, 0, ""
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


def _origin_form(head: bytes, path: str, auth: str | None = None) -> bytes:
    """The request as the origin server expects it: origin-form target, no proxy headers, one request, and
    the index's credentials when this host has some (whatever the client sent in their place is dropped)."""
    first, _, rest = head.partition(b"\r\n")
    method, _, version = first.split(b" ", 2)
    dropped = (b"proxy-", b"connection:", b"authorization:")
    headers = [line for line in rest.split(b"\r\n") if line and not line.lower().startswith(dropped)]
    if auth:
        headers.append(b"Authorization: " + auth.encode("latin-1"))
    return b"\r\n".join([b" ".join([method, path.encode(), version]), *headers, b"Connection: close", b"", b""])


def _pipe(a: socket.socket, b: socket.socket) -> None:
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, b)
    sel.register(b, selectors.EVENT_READ, a)
    try:
        while True:
            for key, _ in sel.select(timeout=300):
                data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not data:
                    return
                key.data.sendall(data)
    except OSError:
        return
    finally:
        sel.close()
