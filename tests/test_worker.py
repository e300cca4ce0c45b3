"""Many machines, one database: an API-only node (PATCHER_WORKERS=0) and `patcher worker` processes with
their own homes share nothing but a real PostgreSQL database; a worker killed mid-job loses nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.errors import BadInput
from patcher.server import load_settings
from patcher.testing import ScriptedModelServer
from tests.test_api import ROOT, ApiServer, fixer, job_body, read_sse

pytest_plugins = ["tests.store_helpers"]


class WorkerProcess:
    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.log_path = home / "worker.log"
        home.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-c", "from patcher.cli import app; app(['worker'])"],
                                         env={**env, "PATCHER_HOME": str(home / "home")}, cwd=ROOT, stdout=log,
                                         stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(60)


def test_a_worker_needs_no_tokens_or_signing_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [k for k in os.environ if k.startswith("PATCHER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    with pytest.raises(BadInput, match="PATCHER_TOKENS is not set"):
        load_settings()
    assert load_settings(worker=True).tokens == {}
    monkeypatch.setenv("PATCHER_WORKERS", "0")
    assert load_settings(dev=True).workers == 0  # an API-only node
    with pytest.raises(BadInput, match="a worker needs PATCHER_WORKERS of at least 1"):
        load_settings(worker=True)


@pytest.mark.docker
@pytest.mark.postgres
@pytest.mark.usefixtures("sandbox_image")
def test_api_node_and_workers_share_only_postgres_and_a_killed_worker_loses_nothing(
        tmp_path: Path, pg_url: str) -> None:
    with ScriptedModelServer([fixer] * 20) as model:
        api = ApiServer(tmp_path / "api", model.base_url, PATCHER_DATABASE_URL=pg_url, PATCHER_WORKERS="0",
                        PATCHER_EXCLUSIVE="0", PATCHER_LEASE_S="3").start()
        worker_env = {**api.env, "PATCHER_WORKERS": "1"}
        worker_env.pop("PATCHER_TOKENS")
        worker_env.pop("PATCHER_SIGNING_KEY")
        first = WorkerProcess(worker_env, tmp_path / "w1")
        second = None
        try:
            with api.client() as c:
                job_id = c.post("/v1/jobs", json=job_body(api.repo(), ref="main")).json()["id"]
                live = read_sse(c, f"/v1/jobs/{job_id}/events", stop_after=2)  # the API node streams it live
            assert next(json.loads(m["data"])["type"] for m in live if "id" in m) == "run_start", first.log()
            assert first.stop(signal.SIGKILL) == -signal.SIGKILL  # mid-job
            second = WorkerProcess(worker_env, tmp_path / "w2")
            result = api.wait(job_id, timeout=240)
            with api.client() as c:
                view = c.get("/v1/jobs", params={"state": "done"}).json()["jobs"]
                events = read_sse(c, f"/v1/jobs/{job_id}/events")
                resumed = read_sse(c, f"/v1/jobs/{job_id}/events", last_id=int(live[-1]["id"]))
        finally:
            if second is not None:
                assert second.stop() == 0, second.log()
            first.stop(signal.SIGKILL)
            api.stop()
    assert (result["status"], result["reason"]) == ("verified", "verified"), (result, second and second.log())
    assert [(j["id"], j["attempts"]) for j in view] == [(job_id, 2)]
    ids = [int(m["id"]) for m in events]
    assert ids == list(range(1, len(ids) + 1)) and events[-1]["event"] == "run_end"
    attempts = [json.loads(m["data"])["job_attempt"] for m in events]
    assert attempts[0] == 1 and attempts[-1] == 2 and attempts == sorted(attempts)
    assert [m for m in resumed if "id" in m] == [m for m in events if int(m["id"]) > int(live[-1]["id"])]
    assert not list((tmp_path / "api" / "home").glob("jobs/*/*.jsonl")), "the API node ran nothing itself"
    assert list((tmp_path / "w2" / "home").glob(f"jobs/{job_id}/*.jsonl")), "the second worker ran it"
