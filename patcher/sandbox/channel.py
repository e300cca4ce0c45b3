"""The host end of the tool server's JSON-lines stream, with a host-side deadline as backstop."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable

from patcher.errors import SandboxError
from sandbox.commands import DEFAULT_ALLOWLIST
from sandbox.protocol import (
    PingRequest,
    ProtocolError,
    Request,
    ToolResult,
    decode_result,
    encode_request,
)
from sandbox.tree import header

MAX_LINE = 16 * 1024 * 1024
"""Largest result line accepted; the server caps far below this, so more means something is wrong."""

Recv = Callable[[float], bytes]
"""Returns the next chunk of the server's stdout within the timeout; b"" at end of stream."""


class Channel:
    """Sends typed requests, reads signed results; a late, unsigned or oversized answer is an error."""

    def __init__(self, send: Callable[[bytes], None], recv: Recv, backstop_s: float) -> None:
        self._send, self._recv, self._backstop = send, recv, backstop_s
        self._key = secrets.token_bytes(32)
        self._buf = bytearray()
        self._next_id = 0

    def hello(self, allow: list[list[str]], timeout_s: float, base: str | None = None, tree: bytes = b"") -> None:
        """The key, extra allowlist entries and base. `tree` (a container's: sandbox/boot.py unpacks it) goes
        first, behind its header."""
        if tree:
            self._send(header(len(tree)))
            self._send(tree)
        extra = [list(p) for p in allow if tuple(p) not in DEFAULT_ALLOWLIST]
        hello = {"key": self._key.hex(), "allow": extra, **({"base": base} if base else {})}
        self._send((json.dumps({"hello": hello}) + "\n").encode())
        call_id, result = self._read_result(time.monotonic() + timeout_s)
        if call_id != 0 or result.is_error:
            raise SandboxError(f"tool server did not start: {result.output}")

    def call(self, request: Request, deadline_s: float) -> ToolResult:
        self._next_id += 1
        call_id = self._next_id
        self._send(encode_request(call_id, request, deadline_s))
        got_id, result = self._read_result(time.monotonic() + deadline_s + self._backstop)
        if got_id != call_id:
            raise SandboxError(f"tool server answered call {got_id} while call {call_id} was pending")
        return result

    def ping(self, timeout_s: float = 10.0) -> ToolResult:
        return self.call(PingRequest(), timeout_s)

    def _read_result(self, until: float) -> tuple[int, ToolResult]:
        line = self._read_line(until)
        try:
            return decode_result(line, self._key)
        except ProtocolError as e:
            raise SandboxError(f"tool server sent an invalid result: {e}") from e

    def _read_line(self, until: float) -> bytes:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                return line
            if len(self._buf) > MAX_LINE:
                raise SandboxError(f"tool server sent a line over {MAX_LINE} bytes")
            left = until - time.monotonic()
            if left <= 0:
                raise SandboxError("tool server did not answer before the host-side deadline")
            try:
                chunk = self._recv(left)
            except TimeoutError as e:
                raise SandboxError("tool server did not answer before the host-side deadline") from e
            if not chunk:
                raise SandboxError("tool server closed its stream (the container may have been killed)")
            self._buf += chunk
