"""Cancel latency of a running job: `POST /v1/jobs/{id}/cancel` until the job's state is `cancelled`.

Starts a real `patcher serve` (uvicorn subprocess, SQLite, real Docker) against ScriptedModelServer on
loopback, submits a job whose agent blocks either in a model call (the model answers after 300 s) or in a
tool call (`run_test` of a 120 s sleep inside the box), cancels it once the call is under way, and
measures until GET /v1/jobs/{id} says `cancelled`. Prints the median and the worst of N runs of each.

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.cancel [N]
"""

from __future__ import annotations

import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from patcher.config import SANDBOX_IMAGE
from patcher.review import generate_keypair
from patcher.testing import ScriptedModelServer, delay, reply
from patcher.trace import read_events

GREET = {"greet/__init__.py": "", "greet/core.py": "def greet(name):\n    raise NotImplementedError('greet')\n",
         "tests/test_greet.py": "from greet.core import greet\n\n\ndef test_greet():\n"
                                "    assert greet('bob') == 'hello, bob'\n"}
TRACEBACK = ('Traceback (most recent call last):\n  File "/srv/app/greet/core.py", line 2, in greet\n'
             "    raise NotImplementedError('greet')\nNotImplementedError: greet\n")
SLEEP = ("run_test", {"command": "python -c \"import time; time.sleep(120)\""})
TOKEN = secrets.token_hex(16)


def _repo(path: Path) -> Path:
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    for rel, text in GREET.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


def _serve(home: Path, model_url: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    generate_keypair(home / "key.pem", home / "key.pub.pem")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHER_", "OPENAI_"))} | {
        "PATCHER_HOME": str(home), "PATCHER_TOKENS": f"bench:{TOKEN}", "PATCHER_SIGNING_KEY": str(home / "key.pem"),
        "PATCHER_REPO_ROOTS": str(home),
        "PATCHER_SANDBOX_IMAGE": os.environ.get("PATCHER_SANDBOX_IMAGE", SANDBOX_IMAGE),
        "PATCHER_WORKERS": "1", "OPENAI_BASE_URL": model_url, "PATCHER_MODEL": "scripted-model"}
    proc = subprocess.Popen([sys.executable, "-c", f"from patcher.server.app import serve; serve('127.0.0.1', {port})"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/openapi.json", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


def _one(c: httpx.Client, model: ScriptedModelServer, repo: Path, home: Path, blocking: str) -> float:
    before = len(model.chat_requests)
    model.add(delay(300) if blocking == "model_call" else reply(None, [SLEEP]))
    job_id = c.post("/v1/jobs", json={"repo": str(repo), "traceback": TRACEBACK}).json()["id"]
    while len(model.chat_requests) <= before:
        time.sleep(0.02)
    if blocking == "tool_call":
        while not any(e["type"] == "tool_call" or (e["type"] == "model_call" and e.get("tool_calls"))
                      for p in (home / "jobs" / job_id).glob("*.jsonl") for e in read_events(p)):
            time.sleep(0.02)
    time.sleep(0.5)
    started = time.monotonic()
    c.post(f"/v1/jobs/{job_id}/cancel")
    while c.get(f"/v1/jobs/{job_id}").headers["X-Patcher-Job-State"] != "cancelled":
        time.sleep(0.01)
    return time.monotonic() - started


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as model:
        home = Path(tmp)
        repo = _repo(home / "greet")
        proc, url = _serve(home, model.base_url)
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                for blocking in ("model_call", "tool_call"):
                    took = [_one(c, model, repo, home, blocking) for _ in range(n)]
                    print(f"cancel while blocked in a {blocking}: median {statistics.median(took):.2f} s, "
                          f"worst {max(took):.2f} s over {n} runs")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
