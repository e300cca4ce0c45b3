"""Load test on this machine: PostgreSQL, 2 API processes (PATCHER_WORKERS=0), 3 `patcher worker`
processes, JOBS jobs with a scripted model on small generated repositories; one worker is killed with
SIGKILL mid-run and a fresh one takes its place.

Prints throughput and submit-to-done latency percentiles, and checks: every job ends verified (none
lost), each finished exactly once (one run_end among all its attempts' events, attempts recorded), and
every job's event stream, read through an API node other than the one it was submitted to, arrived
complete and in order (ids 1..N, seq contiguous within each attempt, ending in run_end).

    .venv/bin/python -m bench.load [JOBS]        # needs Docker, the sandbox image, scripts/postgres.sh
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from patcher.review import generate_keypair
from patcher.testing import ScriptedModelServer, reply

ROOT = Path(__file__).resolve().parents[1]
PG = (os.environ.get("PATCHER_TEST_PG_URL")
      or "postgresql+psycopg://postgres@/postgres?host=/tmp/patcher-pg&port=54329")
TOKEN = "loadtest-" + secrets.token_hex(12)
BUG, FIXED = "return total / len(values) + 1", "return total / len(values)"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "PATH": "/usr/bin:/bin"}
TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/tests/test_stats.py", line 5, in test_mean
    assert mean([2, 4]) == 3
AssertionError: assert 4.0 == 3
"""


def repo(path: Path, n: int) -> Path:
    files = {"stats/__init__.py": "",
             "stats/core.py": f"OFFSET = {n}\n\n\ndef mean(values):\n    total = sum(values)\n    {BUG}\n",
             "tests/test_stats.py": "from stats.core import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"}
    for rel, body in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(body)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=GIT_ENV, check=True, capture_output=True)
    return path


def fixer(body: dict[str, Any]) -> Any:
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return reply("Fixed the mean.")
    return reply(None, [("edit_file", {"path": "stats/core.py", "old_text": BUG, "new_text": FIXED})])


def fresh_database() -> str:
    name = f"patcher_load_{secrets.token_hex(4)}"
    admin = create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(PG).set(database=name).render_as_string(hide_password=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(code: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/openapi.json", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"API node {url} did not start")


def sse(client: httpx.Client, job_id: str) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    current: dict[str, str] = {}
    with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=httpx.Timeout(30, read=120)) as r:
        for line in r.iter_lines():
            if line == "" and "data" in current:
                if "id" in current:
                    out.append((int(current["id"]), json.loads(current["data"])))
                current = {}
            elif ":" in line and not line.startswith(":"):
                key, _, value = line.partition(":")
                current[key] = value.strip()
    return out


def check_stream(events: list[tuple[int, dict[str, Any]]]) -> str | None:
    ids = [n for n, _ in events]
    if ids != list(range(1, len(ids) + 1)):
        return f"ids not 1..N: {ids[:10]}…"
    if not events or events[-1][1].get("type") != "run_end":
        return "does not end in run_end"
    if sum(e.get("type") == "run_end" for _, e in events) != 1:
        return "more than one run_end: finished twice"
    by_attempt: dict[int, list[int]] = {}
    for _, e in events:
        by_attempt.setdefault(e["job_attempt"], []).append(e["seq"])
    for attempt, seqs in by_attempt.items():
        if seqs != list(range(1, len(seqs) + 1)):
            return f"attempt {attempt}: seq not contiguous"
    return None


def main(jobs: int = 60) -> int:
    work = Path(tempfile.mkdtemp(prefix="patcher-load-"))
    generate_keypair(work / "signer.pem", work / "signer.pub.pem")
    (work / "repos").mkdir()
    repos = [repo(work / "repos" / f"r{n}", n) for n in range(jobs)]
    database = fresh_database()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHER_", "OPENAI_"))}
    with ScriptedModelServer([fixer] * (jobs * 4)) as model:
        env = clean | {"PATCHER_DATABASE_URL": database, "PATCHER_TOKENS": f"load:{TOKEN}",
                       "PATCHER_SIGNING_KEY": str(work / "signer.pem"), "PATCHER_REPO_ROOTS": str(work / "repos"),
                       "PATCHER_EXCLUSIVE": "0", "PATCHER_LEASE_S": "6", "PATCHER_MAX_ACTIVE_PER_TOKEN": "1000",
                       "OPENAI_BASE_URL": model.base_url, "PATCHER_MODEL": "scripted-model",
                       **({"PATCHER_SANDBOX_IMAGE": os.environ["PATCHER_SANDBOX_IMAGE"]}
                          if os.environ.get("PATCHER_SANDBOX_IMAGE") else {})}
        ports = [free_port(), free_port()]
        apis = [spawn(f"from patcher.server.app import serve; serve('127.0.0.1', {p})",
                      env | {"PATCHER_HOME": str(work / f"api{i}"), "PATCHER_WORKERS": "0"}, work / f"api{i}.log")
                for i, p in enumerate(ports)]
        workers = [spawn("from patcher.cli import app; app(['worker'])",
                         env | {"PATCHER_HOME": str(work / f"w{i}"), "PATCHER_WORKERS": "1"}, work / f"w{i}.log")
                   for i in range(3)]
        try:
            urls = [f"http://127.0.0.1:{p}" for p in ports]
            for url in urls:
                wait_up(url)
            auth = {"Authorization": f"Bearer {TOKEN}"}
            clients = [httpx.Client(base_url=u, headers=auth, timeout=30) for u in urls]
            started = time.monotonic()
            submitted: dict[str, tuple[float, int]] = {}
            for n, path in enumerate(repos):
                r = clients[n % 2].post("/v1/jobs", json={"repo": str(path), "traceback": TRACEBACK,
                                                          "test_command": "python -m pytest -q tests"})
                assert r.status_code == 202, r.text
                submitted[r.json()["id"]] = (time.monotonic(), n % 2)
            done: dict[str, float] = {}
            killed = False
            while len(done) < jobs and time.monotonic() - started < 1800:
                for job_id in [j for j in submitted if j not in done]:
                    state = clients[0].get(f"/v1/jobs/{job_id}").headers.get("X-Patcher-Job-State")
                    if state in ("done", "failed", "cancelled"):
                        done[job_id] = time.monotonic()
                if not killed and len(done) >= jobs // 3:
                    dead = [n for n, w in enumerate(workers) if w.poll() is not None]
                    if dead:
                        raise SystemExit(f"workers {dead} exited before the kill: see {work}/w*.log")
                    workers[0].send_signal(signal.SIGKILL)  # mid-run, with jobs in flight
                    workers[0].wait()
                    workers.append(spawn("from patcher.cli import app; app(['worker'])",
                                         env | {"PATCHER_HOME": str(work / "w3"), "PATCHER_WORKERS": "1"},
                                         work / "w3.log"))
                    killed = True
                time.sleep(0.5)
            elapsed = time.monotonic() - started
            problems = []
            views = {j["id"]: j for j in clients[1].get("/v1/jobs", params={"limit": 500}).json()["jobs"]}
            for job_id, (_, node) in submitted.items():
                view = views.get(job_id)
                if view is None or job_id not in done:
                    problems.append(f"{job_id}: lost ({view and view['state']})")
                    continue
                result = clients[node].get(f"/v1/jobs/{job_id}").json()
                if result.get("status") != "verified":
                    problems.append(f"{job_id}: {result.get('status')} ({result.get('message')})")
                if why := check_stream(sse(clients[1 - node], job_id)):  # read through the other node
                    problems.append(f"{job_id}: events {why}")
            retried = sum(1 for v in views.values() if v.get("attempts", 1) > 1)
            if killed and not retried:
                problems.append("the SIGKILLed worker held no running job: the kill tested nothing")
        finally:
            for proc in [*apis, *workers]:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in [*apis, *workers]:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
    latencies = sorted(done[j] - submitted[j][0] for j in done)
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    print(f"{jobs} jobs, 2 API nodes, 3 workers (one SIGKILLed after {jobs // 3} done, replaced): "
          f"{len(done)} finished in {elapsed:.1f} s = {len(done) / elapsed * 60:.1f} jobs/min; "
          f"{retried} re-run after the kill")
    print(f"submit-to-done latency: p50 {q[49]:.1f} s, p90 {q[89]:.1f} s, p99 {q[98]:.1f} s, "
          f"max {latencies[-1]:.1f} s")
    print("checks: " + ("all jobs verified, none lost, none finished twice, every stream complete and in order"
                        if not problems else f"{len(problems)} PROBLEMS:\n  " + "\n  ".join(problems[:20])))
    print(f"logs in {work}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(*(int(a) for a in sys.argv[1:2])))
