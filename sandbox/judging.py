"""Server side of the second judge (judge/patcher_judge.py): a fresh copy of the tree, and runs in contexts that
differ in what production never sees.

The tree is copied (without .git) to a path chosen at random per request. Each context is one judge process
(`python -S`, so no .pth line runs in the key holder), with its own key on stdin and signed records back on a
pipe, as the harness's evidence: `bare` looks like an application run (no safe-path or isolation flags, an
empty working directory, PATH, HOME and LANG only, argv naming an installed script); `dressed` looks like the
pytest run (isolated flags, the tree as working directory, pytest's environment variables, pytest imported,
output captured) and is where the diff's lines and the compared values are watched. A job without
`contexts` runs `bare` alone.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from typing import Any

from sandbox.evidence import Evidence
from sandbox.protocol import ToolResult
from sandbox.runner import HeadTail, finish

JUDGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge", "patcher_judge.py")


CONTEXTS: dict[str, dict[str, Any]] = {
    "bare": {"flags": ["-S", "-E", "-s"], "argv": ["/usr/local/bin/app"], "dress": False, "observe": False},
    "dressed": {"flags": ["-S", "-I"], "argv": [], "dress": True, "observe": True},
}
PYTEST_ENV = {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider",
              "PYTHONUNBUFFERED": "1", "PYTHONSAFEPATH": "1", "CI": "true"}


def judge(spec: str, repo: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    try:
        job = json.loads(spec)
        cases, restore = list(job["cases"]), dict(job.get("restore") or {})
        names = [str(n) for n in job.get("contexts") or ["bare"] if n in CONTEXTS]
    except (ValueError, KeyError, TypeError) as e:
        return ToolResult.error(f"bad judge job: {e}")
    top = tempfile.mkdtemp(prefix=secrets.token_hex(4))
    try:
        tree = os.path.join(top, secrets.token_hex(6), secrets.token_hex(3))
        shutil.copytree(repo, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        _restore(tree, restore)
        results: dict[str, ToolResult] = {}
        for n, name in enumerate(names):
            share = (deadline_at - time.monotonic()) / (len(names) - n)
            mine = [c for c in cases if name in (c.get("contexts") or ["bare"])]
            results[name] = _context(name, {**job, "cases": mine}, tree, sweep_mode, time.monotonic() + share)
        return _merged(results)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _context(name: str, job: dict[str, Any], tree: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    home, tmp, private = (tempfile.mkdtemp(prefix=secrets.token_hex(4)) for _ in range(3))
    context = CONTEXTS[name]
    env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    if context["dress"]:
        env.update(PYTEST_ENV)
    channel = Evidence()
    budget = max(deadline_at - time.monotonic() - 1.0, 1.0)
    groups = {str(c.get("group") or c["id"]) for c in job["cases"]}
    spec = {**job, "record_fd": channel.child_fds[1], "root": tree, "tmp": tmp, "budget_s": budget,
            "group_s": max(budget * 0.9 / max(len(groups), 1), min(budget, 5.0)),
            "context": {"name": name, "argv": context["argv"], "dress": context["dress"],
                        "observe": context["observe"]}}
    try:
        job_file = os.path.join(private, "job.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        cwd = tree if context["dress"] else home
        return _run(["python", *context["flags"], JUDGE, job_file], cwd, env, channel, sweep_mode, deadline_at)
    finally:
        channel.close()
        for d in (home, tmp, private):
            shutil.rmtree(d, ignore_errors=True)


def _merged(results: dict[str, ToolResult]) -> ToolResult:
    """One answer: the first context's as `evidence` (what older hosts read), every context's by name."""
    first = next(iter(results.values()))
    output = "\n".join(f"[{name}] {r.output}" for name, r in results.items())
    contexts = {name: {**dict(r.data), "exit_code": r.exit_code, "timed_out": r.timed_out}
                for name, r in results.items()}
    return ToolResult(is_error=any(r.is_error for r in results.values()), output=output[-65536:],
                      exit_code=first.exit_code, truncated_bytes=sum(r.truncated_bytes for r in results.values()),
                      timed_out=any(r.timed_out for r in results.values()),
                      data={"evidence": first.data.get("evidence"), "contexts": contexts})
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


def _run(argv: list[str], cwd: str, env: dict[str, str], channel: Evidence, sweep_mode: str,
         deadline_at: float) -> ToolResult:
    capture = HeadTail()
    key_r, rec_w = channel.child_fds
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=key_r, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(rec_w,))
    except OSError as e:
        return ToolResult.error(f"could not start the second judge: {e}")
    return finish(proc, channel, capture, sweep_mode, deadline_at)
