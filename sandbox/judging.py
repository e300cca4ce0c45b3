"""Server side of the second judge (judge/patcher_judge.py): fresh copies of the tree, and runs in contexts that
differ in what production never sees.

The tree is copied (without .git) to paths chosen at random per request, one per tree the job names in `trees`:
`base` (the files in `restore` put back as on the base) and `patched` (the tree as it is); a job without `trees`
has `base`, and `patched` too where it says `patched`. Each context is one judge process (`python -S`,
so no .pth line runs in the key holder) for both trees, with its own key on stdin and signed records back on a
pipe, as the harness's evidence; the contexts run side by side. `bare` looks like an application run (its child
a new interpreter with no flags at all, its site run as Python runs it, an empty working directory, PATH, HOME
and LANG only, argv naming a script outside the interpreter's prefix, a `__main__` with a loader); `dressed`
looks like the pytest run (isolated flags, the tree as working directory, pytest's environment variables, pytest
imported, output captured) and is where the diff's lines and the compared values are watched. A job without
`contexts` runs `bare` alone; a `serial` job runs its contexts one after the other (the host's, beside a pytest
run in another box).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

from sandbox.evidence import EvidenceChannel
from sandbox.protocol import ToolResult
from sandbox.runner import HeadTail, drain, kill_group, result, sweep

JUDGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge", "patcher_judge.py")


CONTEXTS: dict[str, dict[str, Any]] = {
    "bare": {"flags": ["-S", "-E", "-s"], "argv": ["/srv/app/main.py"], "dress": False, "observe": False,
             "fresh": True},
    "dressed": {"flags": ["-S", "-I"], "argv": [], "dress": True, "observe": True, "fresh": False},
}
PYTEST_ENV = {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider",
              "PYTHONUNBUFFERED": "1", "PYTHONSAFEPATH": "1", "CI": "true"}


def judge(spec: str, repo: str, sweep_mode: str, deadline_at: float) -> ToolResult:
    try:
        job = json.loads(spec)
        cases, restore = list(job["cases"]), dict(job.get("restore") or {})
        names = [str(n) for n in job.get("contexts") or ["bare"] if n in CONTEXTS]
        trees = [str(t) for t in job.get("trees") or (["base", "patched"] if job.get("patched") else ["base"])]
        if any(t not in ("base", "patched") for t in trees):
            raise ValueError(f"no such tree among {trees}")
    except (ValueError, KeyError, TypeError) as e:
        return ToolResult.error(f"bad judge job: {e}")
    top = tempfile.mkdtemp(prefix=secrets.token_hex(4))
    try:
        roots = {t: os.path.join(top, secrets.token_hex(6), secrets.token_hex(3)) for t in trees}
        for tree, root in roots.items():
            shutil.copytree(repo, root, symlinks=True, ignore=shutil.ignore_patterns(".git"))
            if tree == "base":
                restore_files(root, restore)
        runs = [_Context(name, {**job, "workspace": repo,
                                "cases": [c for c in cases if name in (c.get("contexts") or ["bare"])]},
                         roots, deadline_at) for name in names]
        if job.get("serial"):  # one context after the other: beside a pytest run, one core each
            return _merged({k: v for run in runs for k, v in _run_all([run], sweep_mode, deadline_at).items()})
        return _merged(_run_all(runs, sweep_mode, deadline_at))
    finally:
        shutil.rmtree(top, ignore_errors=True)


class _Context:
    """One context's judge process: its job file, working directory, environment and evidence channel."""

    def __init__(self, name: str, job: dict[str, Any], roots: dict[str, str], deadline_at: float) -> None:
        self.name, context = name, CONTEXTS[name]
        self.home, self.tmp, self.private = (tempfile.mkdtemp(prefix=secrets.token_hex(4)) for _ in range(3))
        self.env = {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": self.home,
                    "LANG": "C.UTF-8", **(PYTEST_ENV if context["dress"] else {})}
        self.channel = EvidenceChannel()
        budget = max(deadline_at - time.monotonic() - 1.0, 1.0)
        groups = {str(c.get("group") or c["id"]) for c in job["cases"]}
        spec = {**job, "record_fd": self.channel.child_fds[1], "roots": roots, "tmp": self.tmp, "budget_s": budget,
                "group_s": max(budget * 0.9 / max(len(groups), 1), min(budget, 5.0)),
                "context": {"name": name, "argv": context["argv"], "dress": context["dress"],
                            "observe": context["observe"], "fresh": context["fresh"]}}
        self.job_file = os.path.join(self.private, "job.json")
        with open(self.job_file, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        self.argv = ["python", *context["flags"], JUDGE, self.job_file]
        self.capture = HeadTail()

    def close(self) -> None:
        self.channel.close()
        for d in (self.home, self.tmp, self.private):
            shutil.rmtree(d, ignore_errors=True)


def _run_all(runs: list[_Context], sweep_mode: str, deadline_at: float) -> dict[str, ToolResult]:
    """Every context's process at once; each drained in a thread of its own, the sweep once they all ended."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    out: dict[str, ToolResult] = {}
    try:
        for run in runs:
            key_r, rec_w = run.channel.child_fds
            try:
                procs[run.name] = subprocess.Popen(run.argv, cwd=run.home, env=run.env, stdin=key_r,
                                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                   start_new_session=True, pass_fds=(rec_w,))
            except OSError as e:
                out[run.name] = ToolResult.error(f"could not start the second judge: {e}")
                continue
            run.channel.started()
        timed_out: dict[str, bool] = {}
        threads = [threading.Thread(target=_drain, args=(procs[r.name], r, deadline_at, timed_out))
                   for r in runs if r.name in procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        swept = sweep(sweep_mode)
        for run in runs:
            if run.name in procs:
                out[run.name] = result(procs[run.name], run.channel, run.capture, timed_out[run.name], swept)
        return {r.name: out[r.name] for r in runs}
    finally:
        for run in runs:
            run.close()


def _drain(proc: subprocess.Popen[bytes], run: _Context, deadline_at: float, timed_out: dict[str, bool]) -> None:
    with proc:
        timed_out[run.name] = drain(proc, run.capture.add, deadline_at, {run.channel.read_fd: run.channel.add})
        kill_group(proc)
        proc.wait()


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


def restore_files(tree: str, restore: dict[str, str | None]) -> None:
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
