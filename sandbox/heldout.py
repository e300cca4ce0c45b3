"""Server side of the held-out judge (judge/heldout/patcher_heldout.py): each run in a fresh copy of the tree.

As the second judge's runs (judging.py): the tree copied without .git to a path chosen at random, the files the
diff changed put back first where the host asks (the base). The process looks like a test run's: the runner's
environment and flags (runner.child_env), the copy as its working directory, the OOM killer's first choice; or,
for mode `call` with `app`, like an application's (see _run). Records
come back signed on the harness's channel (evidence.py).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile

from sandbox.evidence import EvidenceChannel
from sandbox.judging import restore_files
from sandbox.protocol import ToolResult
from sandbox.runner import HeadTail, child_env, finish, prefer_oom_kill

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge", "heldout", "patcher_heldout.py")


def held_out(spec: str, repo: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    try:
        job = dict(json.loads(spec))
        put_back = dict(job.pop("restore", None) or {})
        if str(job["mode"]) not in ("record", "call", "values"):
            raise ValueError(f"no mode {job['mode']!r}")
    except (ValueError, KeyError, TypeError) as e:
        return ToolResult.error(f"bad held-out job: {e}")
    top = tempfile.mkdtemp(prefix=secrets.token_hex(4))
    tmp, private = (tempfile.mkdtemp(prefix=secrets.token_hex(4)) for _ in range(2))
    try:
        tree = os.path.join(top, secrets.token_hex(6), secrets.token_hex(3))
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        restore_files(tree, put_back)
        job_file = os.path.join(private, "job.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump({**job, "root": tree, "tmp": tmp, "workspace": repo}, f)
        return _run(job_file, tmp if job.get("app") else tree, sweep_mode, deadline_at, bool(job.get("app")))
    finally:
        for d in (top, tmp, private):
            shutil.rmtree(d, ignore_errors=True)


def _run(job_file: str, cwd: str, sweep_mode: str, deadline_at: float, app: bool) -> ToolResult:
    """The judge's process, made to look like a test run's (the runner's environment and flags, the tree as its
    working directory, the OOM killer's first choice): what still differs is its path and an interval timer. With
    `app`, like an application's instead: PATH, HOME and LANG only (the channel's variable is gone before any
    repository code runs), no flags, a working directory of its own."""
    channel = EvidenceChannel()
    try:
        env = ({"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": cwd, "LANG": "C.UTF-8"}
               if app else child_env(cwd))
        env["PATCHER_EVIDENCE"] = channel.env_value  # the records are the judge's, not pytest's
        proc = subprocess.Popen(["python", SCRIPT, job_file], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=prefer_oom_kill, pass_fds=channel.child_fds)
    except OSError as e:
        channel.close()
        return ToolResult.error(f"could not start the held-out judge: {e}")
    try:
        return finish(proc, channel, HeadTail(), sweep_mode, deadline_at)
    finally:
        channel.close()
