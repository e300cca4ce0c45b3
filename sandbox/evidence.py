"""Server side of the evidence channel (see harness/patcher_channel.py): the pipes and the checked records.

The per-run key goes into a pipe the harness reads and closes at import; records come back on a second
pipe, each line `<json>\\t<hmac>`. The server checks signature and sequence, so a line the code under
test writes without the key ends the evidence with a `problem`, and the host calls the run tampered.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from typing import Any

from sandbox.commands import runner_of

HARNESS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness")
MAX_EVIDENCE_BYTES = 8 * 1024 * 1024
PLUGIN = "patcher_evidence"


class EvidenceChannel:
    """Both pipes of one run: `child_fds` go to the test process, `read_fd` stays with the server."""

    def __init__(self, job: str = "") -> None:
        """`job`: a held-out job (one JSON line) sent after the key, for the harness to ask inside the run."""
        self.key = secrets.token_bytes(32)
        key_r, key_w = os.pipe()
        self.read_fd, rec_w = os.pipe()
        data = self.key.hex().encode() + (b"\n" + job.encode() if job else b"")
        with contextlib.suppress(OSError):  # room for a job bigger than a pipe's default 64 KiB (F_SETPIPE_SZ)
            fcntl.fcntl(key_w, 1031, max(len(data), 65536))
        while data:
            data = data[os.write(key_w, data):]
        os.close(key_w)
        self.child_fds = (key_r, rec_w)
        self.buf = bytearray()
        self.overflow = False

    @property
    def env_value(self) -> str:
        return f"{self.child_fds[0]}:{self.child_fds[1]}"

    def started(self) -> None:
        """After the child is spawned: our copies of its ends go, so EOF means every writer is gone."""
        for fd in self.child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def add(self, chunk: bytes) -> None:
        if len(self.buf) + len(chunk) > MAX_EVIDENCE_BYTES:
            self.overflow = True
            return
        self.buf += chunk

    def close(self) -> None:
        for fd in (self.read_fd, *self.child_fds):
            with contextlib.suppress(OSError):
                os.close(fd)

    def result(self) -> dict[str, Any]:
        """{"records": [...], "problem": None or a sentence}: records up to the first bad line."""
        records: list[dict[str, Any]] = []
        if self.overflow:
            return {"records": records, "problem": f"over {MAX_EVIDENCE_BYTES} bytes of evidence"}
        lines = bytes(self.buf).split(b"\n")
        if lines[-1]:
            return {"records": records, "problem": "the evidence stream ends in a partial line"}
        for n, line in enumerate(lines[:-1]):
            body, _, mac = line.rpartition(b"\t")
            want = hmac.new(self.key, body, hashlib.sha256).hexdigest().encode()
            if not hmac.compare_digest(mac, want):
                return {"records": records, "problem": f"evidence line {n + 1} is not signed by the harness"}
            record = json.loads(body)
            if record.get("seq") != n:
                return {"records": records, "problem": f"evidence line {n + 1} is out of sequence"}
            records.append(record)
        return {"records": records, "problem": None}


def harness_argv(argv: list[str]) -> list[str]:
    """The argv under its runner's harness (commands.py RUNNERS): `python -m unittest …` becomes the harness's
    unittest runner; pytest gets the plugin from PYTEST_ADDOPTS; a project's own runner (`python manage.py
    test …`, `python -m pkg.runtests …`) runs under the script harness; any other command as it is."""
    runner = runner_of(argv)
    if runner is None or runner.harness is None or runner.enters == "plugin":
        return argv
    rest = argv[1:] if runner.enters == "around" else argv[runner.start:]
    return [argv[0], "-m", runner.harness, *rest]
