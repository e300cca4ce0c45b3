"""Shared by the crash-intake tests: a projects file for the server, and an application under test that
reports its crash with the real `sentry-sdk` (a subprocess: its own interpreter, its own SDK state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
OTHER_KEY = "a5b4c3d2e1f00f1e2d3c4b5a69788796"

APP = """
import sys
import sentry_sdk

dsn, repo, release, call = sys.argv[1:5]
# the frames' local variables sent: an option of its own before sentry-sdk 3, data_collection's (on by default) since
frames = {"include_local_variables": True} if sentry_sdk.VERSION.split(".")[0] == "2" else \
    {"data_collection": {"stack_frame_variables": True}}
sentry_sdk.init(dsn=dsn, release=release or None, default_integrations=False, transport_queue_size=10, **frames)
sys.path.insert(0, repo)
from shop.api import list_products
from shop.pagination import page

session_token = "tok-3f9a1c0d5e7b2a4c6e8f10"   # a module-level secret the frame's globals would show
try:
    eval(call)
except Exception:
    sentry_sdk.capture_exception()
sentry_sdk.flush(10)
"""


def projects_file(path: Path, projects: list[dict[str, Any]], webhooks: list[dict[str, Any]] | None = None) -> Path:
    """The file PATCHER_PROJECTS_FILE names, private to this user as the server requires."""
    path.write_text(json.dumps({"projects": projects, "webhooks": webhooks or []}))
    path.chmod(0o600)
    return path


def project(repo: str, **extra: Any) -> dict[str, Any]:
    """Project 1 on KEY: the bundled shop, reproduced by its pagination tests, offline engine."""
    return {"id": 1, "name": "shop", "keys": [KEY], "repo": repo,
            "job": {"test_command": "python -m pytest -q tests/test_pagination.py", "engine": "offline"}} | extra


def dsn(server_url: str, key: str = KEY, project_id: int = 1) -> str:
    scheme, _, host = server_url.partition("://")
    return f"{scheme}://{key}@{host}/{project_id}"


def send_crash(dsn_: str, repo: Path, release: str = "", call: str = "list_products(3)") -> None:
    """Run the application: it crashes in `call` and sends the crash with sentry-sdk."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
    out = subprocess.run([sys.executable, "-c", APP, dsn_, str(repo), release, call], env=env, capture_output=True,
                         text=True, timeout=60, cwd=repo)
    assert out.returncode == 0, out.stderr


def shop_repo(dest: Path) -> tuple[Path, str]:
    """The bundled example (examples/shop) as a git repository at `dest`; (its path, its commit)."""
    from tests.support.helpers import git, make_repo

    root = Path(__file__).resolve().parents[2] / "examples" / "shop"
    files = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}
    make_repo(dest, files)
    return dest, git(dest, "rev-parse", "HEAD")


FIX_OLD, FIX_NEW = "min(end, len(items) + 1)", "min(end, len(items))"


def fixed(repo: Path) -> tuple[str, str, str]:
    """(the shop's fix as a git diff, the base tree, the tree with the fix), computed in a scratch copy."""
    import shutil
    import tempfile

    from tests.support.helpers import git

    scratch = Path(tempfile.mkdtemp(prefix="fix-"))
    try:
        shutil.copytree(repo, scratch / "r")
        page = scratch / "r" / "shop" / "pagination.py"
        page.write_text(page.read_text().replace(FIX_OLD, FIX_NEW))
        diff = git(scratch / "r", "diff") + "\n"
        git(scratch / "r", "add", "-A")
        return diff, git(repo, "rev-parse", "HEAD^{tree}"), git(scratch / "r", "write-tree")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def tokens_file(path: Path, lines: dict[str, str]) -> Path:
    """PATCHER_GIT_TOKENS_FILE: origin -> [user:]token, private to this user."""
    path.write_text("".join(f"{origin} {token}\n" for origin, token in lines.items()))
    path.chmod(0o600)
    return path


class Receiver:
    """A webhook endpoint on loopback that checks every delivery with the `standardwebhooks` library (the
    receivers' own implementation of the scheme) and keeps what it got; `fail` answers the next n with 500."""

    def __init__(self, secret: str, fail: int = 0) -> None:
        import http.server
        import threading

        from standardwebhooks import Webhook

        receiver = self
        self.secret, self.fail = secret, fail
        self.got: list[dict[str, Any]] = []
        """Each request: headers, body (parsed), verified (bool), status answered."""

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    Webhook(receiver.secret).verify(body, headers)
                    verified = True
                except Exception:
                    verified = False
                status = 500 if receiver.fail > 0 else 204 if verified else 400
                receiver.fail -= status == 500
                receiver.got.append({"headers": headers, "body": json.loads(body), "verified": verified,
                                     "status": status})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def types(self) -> list[str]:
        return [g["body"].get("type", g["body"].get("text", "")) for g in self.got if g["status"] < 300]


Sent = tuple[str, dict[str, str], bytes]
"""A request as an SDK sent it: path, headers, body."""


def captured(repo: Path, release: str, call: str = "list_products(3)", key: str = KEY, project_id: int = 1) -> Sent:
    """What the application's sentry-sdk sends for a crash in `call`, taken by a server on loopback that answers
    200 (to read, or to send again by hand)."""
    import http.server
    import threading

    got: list[Sent] = []

    class Catch(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            got.append((self.path, dict(self.headers), self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Catch)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        send_crash(dsn(f"http://127.0.0.1:{server.server_address[1]}", key, project_id), repo, release, call)
    finally:
        server.shutdown()
        server.server_close()
    assert len(got) == 1, got
    return got[0]
