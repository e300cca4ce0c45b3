"""Cancel and time limits stop work: a long model call or tool call is abandoned when the wall clock runs
out, and `POST /v1/jobs/{id}/cancel` on a running job (real server, real Docker) ends it within 5 s with
`run_end` in its trace and its containers gone. `--max-cost` on a model with no known price is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from patcher.agent import Agent, Limits
from patcher.config import LABEL
from patcher.errors import Cancelled
from patcher.intake import StagedRepo, stage_repo
from patcher.model import OpenAIModel
from patcher.sandbox import LocalSandbox
from patcher.stopper import Stopper
from patcher.testing import ScriptedModelServer, delay, reply
from patcher.trace import Trace, read_events
from tests.support.api import ApiServer
from tests.support.greet import GREET, TRACEBACK
from tests.support.helpers import make_repo

SLEEP = ("run_test", {"command": "python -c \"import time; time.sleep(120)\""})


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagedRepo]:
    s = stage_repo(str(make_repo(tmp_path_factory.mktemp("cancel") / "greet", GREET)))
    yield s
    s.cleanup()


def _agent_run(staged: StagedRepo, tmp_path: Path, steps: list, limits: Limits, stopper: Stopper | None = None
               ) -> tuple[str, float, list[dict]]:
    with ScriptedModelServer(steps) as server, LocalSandbox(staged) as box, \
            Trace(tmp_path / "t.jsonl", "r") as trace:
        model = OpenAIModel(server.model_config(idle_timeout_s=300, max_retries=0))
        started = time.monotonic()
        try:
            outcome = Agent(model, box, trace, limits, stopper=stopper).run("fix it")
            reason = outcome.reason
        except Cancelled:
            reason = "cancelled"
        took = time.monotonic() - started
    return reason, took, read_events(tmp_path / "t.jsonl")


def test_the_wall_clock_holds_during_a_long_model_call(staged: StagedRepo, tmp_path: Path) -> None:
    reason, took, events = _agent_run(staged, tmp_path, [delay(120)], Limits(timeout_s=2))
    assert reason == "timeout" and took < 4, (reason, took)
    assert events[-1]["type"] == "guard_stop" and "abandoned" in events[-1]["message"]


def test_the_wall_clock_holds_during_a_long_tool_call(staged: StagedRepo, tmp_path: Path) -> None:
    reason, took, events = _agent_run(staged, tmp_path, [reply(None, [SLEEP]), reply("done")], Limits(timeout_s=2))
    assert reason == "timeout" and took < 4, (reason, took)
    assert "run_test outlived the wall-clock limit" in events[-1]["message"]


def test_a_cancel_abandons_the_model_call_at_once(staged: StagedRepo, tmp_path: Path) -> None:
    stopper = Stopper()
    threading.Timer(1.0, stopper.flag.set).start()
    reason, took, _ = _agent_run(staged, tmp_path, [delay(120)], Limits(), stopper)
    assert reason == "cancelled" and took < 2, (reason, took)


def test_max_cost_with_a_model_of_no_known_price_is_refused_at_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", GREET)
    tb = tmp_path / "tb.txt"
    tb.write_text(TRACEBACK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PATCHER_"))}
    env |= {"PATCHER_HOME": str(tmp_path / "h"), "PATCHER_SANDBOX_IMAGE": "patcher-no-such-image:i14"}
    started = time.monotonic()
    out = subprocess.run([str(Path(sys.executable).parent / "patcher"), "fix", str(repo), "--traceback", str(tb),
                          "--engine", "agent", "--model", "my-local-model", "--base-url", "http://127.0.0.1:9/v1",
                          "--max-cost", "0.5", "--json"], capture_output=True, text=True, env=env, timeout=60)
    result = json.loads(out.stdout)
    assert out.returncode == 2 and result["reason"] == "bad_input", out.stdout
    assert "knows no price for the model 'my-local-model'" in result["message"]
    assert time.monotonic() - started < 10, "refused before staging or Docker"


def _job_containers(client: docker.DockerClient, srv: ApiServer) -> list[str]:
    assert srv.proc is not None
    return [c.name for c in client.containers.list(all=True, filters={"label": LABEL})
            if f":{srv.proc.pid}:" in c.labels.get("io.patcher.owner", "")]


@pytest.mark.docker
@pytest.mark.parametrize("blocking", ["model_call", "tool_call"])
def test_cancel_stops_a_running_job_within_5_s(tmp_path: Path, sandbox_image: str, blocking: str) -> None:
    steps = [delay(300)] if blocking == "model_call" else [reply(None, [SLEEP]), reply("done")]
    client = docker.from_env()
    with ScriptedModelServer(steps) as model:
        srv = ApiServer(tmp_path, model.base_url).start()
        try:
            repo = make_repo(srv.repos / "greet", GREET)
            with srv.client() as c:
                job_id = c.post("/v1/jobs", json={"repo": str(repo), "traceback": TRACEBACK}).json()["id"]
                deadline = time.monotonic() + 180
                while not model.chat_requests or (blocking == "tool_call" and not _tool_running(srv, job_id)):
                    assert time.monotonic() < deadline, srv.log()
                    time.sleep(0.05)
                time.sleep(0.5)  # well inside the blocking call
                assert _job_containers(client, srv), "the agent's box is up"
                started = time.monotonic()
                assert c.post(f"/v1/jobs/{job_id}/cancel").json()["state"] == "running"
                result = srv.wait(job_id, timeout=30)
                took = time.monotonic() - started
                state = c.get(f"/v1/jobs/{job_id}").headers["X-Patcher-Job-State"]
            left = _job_containers(client, srv)
        finally:
            srv.stop()
    print(f"cancel latency ({blocking}): {took:.2f} s")
    assert took < 5, took
    assert state == "cancelled" and result["reason"] == "cancelled", result
    events = read_events(Path(result["trace"]))
    assert events[-1]["type"] == "run_end" and events[-1]["reason"] == "cancelled"
    assert left == [], "the job's containers are gone"


def _tool_running(srv: ApiServer, job_id: str) -> bool:
    traces = list((srv.home / "home" / "jobs" / job_id).glob("*.jsonl"))
    return bool(traces) and any(e["type"] == "model_call" and e.get("tool_calls") for e in read_events(traces[0]))
