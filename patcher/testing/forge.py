"""The scripted forge: a real HTTP server on 127.0.0.1 speaking the small part of three forge APIs that
delivery uses, so the real clients (PyGithub, python-gitlab, httpx for Gitea) talk to it as to the forge.

    GitHub   {base}/api/v3   GET /repos/{o}/{r}/pulls?head=o:branch&state=all   POST /repos/{o}/{r}/pulls
    GitLab   {base}          GET /api/v4/projects/{path}/merge_requests?source_branch=…   POST the same
    Gitea    {base}/api/v1   GET /repos/{o}/{r}/pulls?state=all   POST /repos/{o}/{r}/pulls

It keeps the pull requests it opened (one per head branch and repository: a second is refused, as the
forges do), records every request, checks the token when one is set (401 otherwise), and plays faults:
`fail(2, 502)` answers the next two requests with 502.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from patcher.testing.server import RecordedRequest

PREFIXES = (("github", "/api/v3/repos/"), ("gitlab", "/api/v4/projects/"), ("gitea", "/api/v1/repos/"))


class ScriptedForge:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.pulls: list[dict[str, Any]] = []
        """Every pull request opened: forge, repository, number, head, base, title, body, draft."""
        self._faults: deque[int] = deque()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> ScriptedForge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> ScriptedForge:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("_Bound", (_Handler,), {"owner": self}))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-forge", daemon=True).start()
        return self

    def close(self) -> None:
        """Stop serving (shutdown waits for the serving thread to leave its loop)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def api(self, forge: str) -> str:
        """The API base URL a client of `forge` (github, gitlab, gitea) is given."""
        return self.base_url + {"github": "/api/v3", "gitlab": "", "gitea": "/api/v1"}[forge]

    def fail(self, times: int, status: int = 502) -> None:
        """Answer the next `times` requests with `status`."""
        with self._lock:
            self._faults.extend([status] * times)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def _serve(self, h: _Handler, method: str) -> None:
        url = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw.strip() else None
        with self._lock:
            self._requests.append(RecordedRequest(method, h.path, {k.lower(): v for k, v in h.headers.items()}, body))
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            return _json(h, fault, {"message": f"scripted fault {fault}"})
        if self.token is not None and self.token not in (h.headers.get("Authorization", "").split(" ")[-1],
                                                         h.headers.get("PRIVATE-TOKEN")):
            return _json(h, 401, {"message": "Bad credentials"})
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        for forge, prefix in PREFIXES:
            if url.path.startswith(prefix):
                return self._route(h, forge, unquote(url.path[len(prefix):]), method, query, body or {})
        return _json(h, 404, {"message": "Not Found"})

    def _route(self, h: _Handler, forge: str, rest: str, method: str, query: dict[str, str], body: dict[str, Any]
               ) -> None:
        suffix = "/merge_requests" if forge == "gitlab" else "/pulls"
        if not rest.endswith(suffix):
            if forge == "github" and rest.count("/") == 1 and method == "GET":
                owner, name = rest.split("/")
                return _json(h, 200, {"full_name": rest, "name": name, "owner": {"login": owner}})
            return _json(h, 404, {"message": "Not Found"})
        repository = rest[: -len(suffix)]
        if method == "GET":
            wanted = query.get("source_branch") or query.get("head", "").split(":")[-1] or None
            found = [p for p in self.pulls if (p["forge"], p["repository"]) == (forge, repository)
                     and (wanted is None or p["head"] == wanted)]
            return _json(h, 200, [self._shape(forge, p) for p in found])
        head = body.get("source_branch") if forge == "gitlab" else body.get("head")
        base = body.get("target_branch") if forge == "gitlab" else body.get("base")
        with self._lock:
            if any((p["forge"], p["repository"], p["head"]) == (forge, repository, head) for p in self.pulls):
                return _json(h, 409 if forge != "github" else 422, {"message": f"a pull request from {head} exists"})
            pull = {"forge": forge, "repository": repository, "number": len(self.pulls) + 1, "head": head,
                    "base": base, "title": body.get("title"), "body": body.get("body", body.get("description")),
                    "draft": bool(body.get("draft"))}
            self.pulls.append(pull)
        return _json(h, 201, self._shape(forge, pull))

    def _shape(self, forge: str, p: dict[str, Any]) -> dict[str, Any]:
        web = f"{self.base_url}/{p['repository']}/{'-/merge_requests' if forge == 'gitlab' else 'pull'}/{p['number']}"
        if forge == "gitlab":
            return {"id": 1000 + p["number"], "iid": p["number"], "web_url": web, "source_branch": p["head"],
                    "target_branch": p["base"], "title": p["title"], "description": p["body"], "state": "opened"}
        owner = p["repository"].split("/")[0]
        return {"id": 1000 + p["number"], "number": p["number"], "html_url": web, "state": "open",
                "title": p["title"], "body": p["body"], "draft": p["draft"],
                "url": f"{self.api(forge)}/repos/{p['repository']}/pulls/{p['number']}",
                "head": {"ref": p["head"], "label": f"{owner}:{p['head']}"}, "base": {"ref": p["base"]}}


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedForge

    def do_GET(self) -> None:
        self.owner._serve(self, "GET")

    def do_POST(self) -> None:
        self.owner._serve(self, "POST")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _json(h: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
