"""The scripted model server: one HTTP request takes the next step of the script (see patcher.testing)."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from patcher.testing.script import CREATED, Delayed, HttpError, Reply, Step


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any = field(default=None)


class ScriptedModelServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1 that plays a script of replies and faults."""

    def __init__(self, steps: Iterable[Step] = (), *, model: str = "scripted-model",
                 api_key: str | None = None) -> None:
        self.model = model
        self.api_key = api_key
        self._steps: deque[Step] = deque(steps)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._served = 0
        self._call_ids = 0
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> ScriptedModelServer:
        handler = type("_BoundHandler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what tests look at
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests, in arrival order."""
        return [r.json for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def model_config(self, **overrides: Any) -> Any:
        """A ModelConfig pointing at this server, with fast retries (overrides win)."""
        from patcher.model import ModelConfig

        values: dict[str, Any] = {"model": self.model, "base_url": self.base_url,
                                  "api_key": self.api_key or "unused", "idle_timeout_s": 5.0,
                                  "retry_initial_s": 0.01, "retry_max_s": 0.05}
        return ModelConfig(**(values | overrides))

    # serving
    def _handle(self, h: _Handler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self._requests.append(RecordedRequest(method, h.path, {k.lower(): v for k, v in h.headers.items()}, body))
        if self.api_key and h.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _send_json(h, 401, _error("Incorrect API key provided.", "invalid_api_key"))
        path = h.path.split("?")[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            model = {"id": self.model, "object": "model", "created": CREATED, "owned_by": "patcher-testing"}
            return _send_json(h, 200, {"object": "list", "data": [model]})
        if method != "POST" or path != "/v1/chat/completions":
            return _send_json(h, 404, _error(f"no route for {method} {h.path}", "not_found"))
        if not isinstance(body, dict):
            return _send_json(h, 400, _error("request body is not a JSON object", "invalid_request_error"))
        self._play(h, body)

    def _play(self, h: _Handler, body: dict[str, Any]) -> None:
        with self._lock:
            step = self._steps.popleft() if self._steps else None
            self._served += 1
            served = self._served
        if step is None:
            msg = f"ScriptedModelServer: script exhausted (request {served} has no step left)"
            return _send_json(h, 500, _error(msg, "script_exhausted"))
        while True:
            if isinstance(step, Delayed):
                if self._closing.wait(step.seconds):
                    return
                step = step.step
            elif isinstance(step, HttpError):
                is_json = isinstance(step.body, dict)
                data = (json.dumps(step.body) if is_json else str(step.body)).encode()
                ctype = "application/json" if is_json else "text/plain"
                return _send(h, step.status, data, ctype, dict(step.headers))
            elif isinstance(step, Reply):
                return self._reply(h, body, step, served)
            else:
                step = step(body)

    def _send_stream(self, h: _Handler, events: list[dict[str, Any]], r: Reply) -> None:
        """Server-sent events, each after `r.token_delay_s`; after `r.silent_after` of them, silence until the
        client goes (or the server closes)."""
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        for n, event in enumerate(events):
            if n == r.silent_after:
                self._closing.wait(120)
                return
            if self._closing.wait(r.token_delay_s):
                return
            h.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            h.wfile.flush()
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()

    def _reply(self, h: _Handler, body: dict[str, Any], r: Reply, served: int) -> None:
        with self._lock:
            first = self._call_ids + 1
            self._call_ids += len(r.tool_calls)
        calls = [{"id": f"call_{first + i}", "type": "function", "function": {"name": n, "arguments": a}}
                 for i, (n, a) in enumerate(r.tool_calls)]
        prompt = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("tools", [])))
        written = len(r.content or "") + sum(len(n) + len(a) for n, a in r.tool_calls)
        pt, ct = r.usage or (max(1, prompt // 4), max(1, written // 4))
        usage = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        base = {"id": f"chatcmpl-{served}", "created": CREATED, "model": r.model or body.get("model", self.model)}
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            events = _stream_events(base, r, calls, usage if r.send_usage and opts.get("include_usage") else None)
            return self._send_stream(h, events, r)
        if self._closing.wait(r.token_delay_s * len(_stream_events(base, r, calls, None))):
            return
        message: dict[str, Any] = {"role": "assistant", "content": r.content}
        if calls:
            message["tool_calls"] = calls
        out = base | {"object": "chat.completion",
                      "choices": [{"index": 0, "message": message, "finish_reason": r.finish_reason,
                                   "logprobs": None}]}
        if r.send_usage:
            out["usage"] = usage
        _send_json(h, 200, out)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall each
    owner: ScriptedModelServer

    def do_GET(self) -> None:
        self._guarded("GET")

    def do_POST(self) -> None:
        self._guarded("POST")

    def _guarded(self, method: str) -> None:
        try:
            self.owner._handle(self, method)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. its timeout fired)
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def _send_json(h: _Handler, status: int, payload: dict[str, Any]) -> None:
    _send(h, status, json.dumps(payload).encode(), "application/json", {})


def _send(h: _Handler, status: int, data: bytes, ctype: str, headers: dict[str, str]) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(data)))
    for k, v in headers.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _stream_events(base: dict[str, Any], r: Reply, calls: list[dict[str, Any]],
                   usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The chunks the way OpenAI sends them: role, content pieces, tool-call pieces, finish, usage."""
    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish,
                                             "logprobs": None}]
        return base | {"object": "chat.completion.chunk", "choices": choices,
                       "usage": usage if delta is None else None}

    events = [chunk({"role": "assistant", "content": ""})]
    if r.content:
        events += [chunk({"content": p}) for p in _pieces(r.content, 8)]
    for i, call in enumerate(calls):
        fn = call["function"]
        events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": fn["name"], "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                   for p in _pieces(fn["arguments"], 7)]
    events.append(chunk({}, r.finish_reason))
    if usage is not None:
        events.append(chunk(None))
    return events
