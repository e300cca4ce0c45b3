"""Server side of the second judge (judge/patcher_judge.py): a fresh copy of the tree, and a run with nothing
of the test runners around it.

The tree is copied (without .git) to a path chosen at random per run; the working directory is an empty
directory elsewhere; the environment holds PATH, HOME (that empty directory) and LANG only; `python` (the one
tests run under) runs isolated (`-I`: no PYTHON* variables, no user site, no script directory on sys.path).
The per-run key goes to the judge on its stdin and its signed records come back on a pipe, as the harness's
evidence does.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import tempfile

from sandbox.evidence import Evidence
from sandbox.protocol import ToolResult
from sandbox.runner import HeadTail, finish

JUDGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge", "patcher_judge.py")


def judge(spec: str, repo: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    try:
        job = json.loads(spec)
        cases, restore = list(job["cases"]), dict(job.get("restore") or {})
    except (ValueError, KeyError, TypeError) as e:
        return ToolResult.error(f"bad judge job: {e}")
    top = tempfile.mkdtemp(prefix=secrets.token_hex(4))
    try:
        tree = os.path.join(top, secrets.token_hex(6), secrets.token_hex(3))
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        _restore(tree, restore)
        home, tmp, private = (tempfile.mkdtemp(prefix=secrets.token_hex(4)) for _ in range(3))
        channel = Evidence()
        job_file = os.path.join(private, "job.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump({"record_fd": channel.child_fds[1], "root": tree, "tmp": tmp, "cases": cases}, f)
        try:
            return _run(["python", "-I", JUDGE, job_file], home, channel, sweep_mode, deadline_at)
        finally:
            channel.close()
            for d in (home, tmp, private):
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _restore(tree: str, restore: dict[str, str | None]) -> None:
    """Files put back as on the base (None: a file the diff added, removed)."""
    for rel, content in restore.items():
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or not rel:
            raise ValueError(f"bad path in restore: {rel!r}")
        path = os.path.join(tree, *parts)
        if content is None:
            if os.path.lexists(path):
                os.unlink(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(content))


def _run(argv: list[str], home: str, channel: Evidence, sweep_mode: str, deadline_at: float) -> ToolResult:
    env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    capture = HeadTail()
    key_r, rec_w = channel.child_fds
    try:
        proc = subprocess.Popen(argv, cwd=home, env=env, stdin=key_r, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(rec_w,))
    except OSError as e:
        return ToolResult.error(f"could not start the second judge: {e}")
    return finish(proc, channel, capture, sweep_mode, deadline_at)
