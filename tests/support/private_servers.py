"""Servers for the private-access tests: git's own smart-HTTP backend behind a token check, and a PEP 503
index behind basic auth, each on a real socket; every Authorization header they see is recorded."""

from __future__ import annotations

import base64
import http.server
import os
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.netns import TestHost

BACKEND = "/usr/lib/git-core/git-http-backend"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Recorder(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        super().__init__(address, handler)
        self.seen: list[str] = []
        """Authorization headers received (also none: "")."""
        self.options: dict[str, Any] = {}
        self.pushes = 0
        """Pushes the backend took (receive-pack requests answered by it)."""


@contextmanager
def serving(handler: Any, on: TestHost | None = None, **options: Any) -> Iterator[Recorder]:
    """A server on loopback, or `on` the session's test host (for what the egress proxy must reach: it
    never connects to loopback), until the block ends."""
    if on is None:
        server = Recorder(("127.0.0.1", 0), handler)
    else:
        address = on.address
        server = on.run(lambda: Recorder((address, 0), handler))
    server.options = options
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def url_of(server: Recorder, path: str = "") -> str:
    host, port = server.server_address[:2]
    return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}{path}"


class GitHandler(http.server.BaseHTTPRequestHandler):
    """Smart HTTP through git-http-backend (CGI) for requests with the right Authorization; options:
    root (GIT_PROJECT_ROOT), auth (the header value wanted), redirect (a base URL to send every request
    to), echo (a text the remote says in an error once authenticated), fail_pushes (how many pushes to
    answer with 500 before taking one)."""

    server: Recorder

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        opts = self.server.options
        self.server.seen.append(self.headers.get("Authorization", ""))
        if opts.get("redirect"):
            self.send_response(302)
            self.send_header("Location", opts["redirect"] + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.headers.get("Authorization") != opts.get("auth"):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if opts.get("echo"):
            body = _pkt("# service=git-upload-pack\n") + b"0000" + _pkt(f"ERR {opts['echo']}")
            self._reply(200, {"Content-Type": "application/x-git-upload-pack-advertisement"}, body)
            return
        if self.command == "POST" and self.path.split("?")[0].endswith("/git-receive-pack"):
            if opts.get("fail_pushes", 0) > 0:
                opts["fail_pushes"] -= 1
                self._reply(500, {"Content-Type": "text/plain"}, b"scripted failure")
                return
            self.server.pushes += 1
        self._cgi(opts["root"])

    def _cgi(self, root: str) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "user", "REMOTE_ADDR": "127.0.0.1",
               "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
               "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        out = subprocess.run([BACKEND], input=body, env=env, capture_output=True, timeout=60).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n") if ": " in line)
        status = int(headers.pop("Status", "200").split()[0])
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _pkt(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


class IndexHandler(http.server.BaseHTTPRequestHandler):
    """A PEP 503 simple index of the wheels in `root` for requests with the right Authorization; options:
    root, auth, redirect (files are answered with a redirect to this base URL instead)."""

    server: Recorder

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        opts = self.server.options
        self.server.seen.append(self.headers.get("Authorization", ""))
        if opts.get("auth") and self.headers.get("Authorization") != opts["auth"]:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="index"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        root = Path(opts["root"])
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if parts[:1] == ["files"] and opts.get("redirect"):
            self.send_response(302)
            self.send_header("Location", opts["redirect"] + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts[:1] == ["files"] and len(parts) == 2 and (root / parts[1]).is_file():
            self._reply((root / parts[1]).read_bytes(), "application/octet-stream")
        elif parts[:1] == ["simple"] and len(parts) == 2:
            links = "".join(f'<a href="/files/{w.name}">{w.name}</a>\n' for w in sorted(root.glob("*.whl"))
                            if w.name.split("-")[0].replace("_", "-") == parts[1])
            self._reply(f"<html><body>\n{links}</body></html>\n".encode(), "text/html")
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def _reply(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def build_wheel(where: Path, name: str, version: str, module: str) -> Path:
    """A pure-Python wheel of one module, written by hand (no build tools)."""
    dist = f"{name.replace('-', '_')}-{version}"
    wheel = where / f"{dist}-py3-none-any.whl"
    files = {f"{name.replace('-', '_')}.py": module,
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n"}
    record = "".join(f"{path},,\n" for path in files) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in {**files, f"{dist}.dist-info/RECORD": record}.items():
            zf.writestr(path, text)
    return wheel


def tls_files(where: Path, host: str) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate chain, server key) for `host`, made with a test CA."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("test ca")).issuer_name(name("test ca"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder().subject_name(name(host)).issuer_name(name("test ca"))
            .public_key(key.public_key()).serial_number(2).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    paths = (where / "ca.pem", where / "server.pem", where / "server.key")
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    paths[2].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


@contextmanager
def serving_tls(handler: Any, on: TestHost, cert: Path, key: Path, **options: Any) -> Iterator[Recorder]:
    import ssl

    with serving(handler, on, **options) as server:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        yield server
