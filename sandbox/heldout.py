"""Server side of the held-out judge (judge/patcher_heldout.py): each run in a fresh copy of the tree.

As the second judge's runs (judging.py): the tree copied without .git to a path chosen at random, the files the
diff changed put back first where the host asks (the base), Python isolated (`-I`), an environment of PATH, HOME
and LANG only. The working directory is the copy for `record` (pytest runs there, as the reproduction did) and
an empty directory for `call`. Records come back signed on the harness's channel (evidence.py).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile

from sandbox.evidence import Evidence
from sandbox.judging import restore_files
from sandbox.protocol import ToolResult
from sandbox.runner import HeadTail, finish

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge", "patcher_heldout.py")


def held_out(spec: str, repo: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    try:
        job = dict(json.loads(spec))
        put_back = dict(job.pop("restore", None) or {})
        mode = str(job["mode"])
    except (ValueError, KeyError, TypeError) as e:
        return ToolResult.error(f"bad held-out job: {e}")
    top = tempfile.mkdtemp(prefix=secrets.token_hex(4))
    home, tmp, private = (tempfile.mkdtemp(prefix=secrets.token_hex(4)) for _ in range(3))
    try:
        tree = os.path.join(top, secrets.token_hex(6), secrets.token_hex(3))
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        restore_files(tree, put_back)
        job_file = os.path.join(private, "job.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump({**job, "root": tree, "tmp": tmp, "workspace": repo}, f)
        return _run(job_file, tree if mode == "record" else home, home, tmp, sweep_mode, deadline_at)
    finally:
        for d in (top, home, tmp, private):
            shutil.rmtree(d, ignore_errors=True)


def _run(job_file: str, cwd: str, home: str, tmp: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    channel = Evidence()
    env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
           "TMPDIR": tmp, "PATCHER_EVIDENCE": channel.env_value}
    try:
        proc = subprocess.Popen(["python", "-I", SCRIPT, job_file], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=channel.child_fds)
    except OSError as e:
        channel.close()
        return ToolResult.error(f"could not start the held-out judge: {e}")
    try:
        return finish(proc, channel, HeadTail(), sweep_mode, deadline_at)
    finally:
        channel.close()
