"""The trace file's guarantees: redaction before writing, one whole line per event, survival of SIGKILL.

Agent runs are real: the openai client against ScriptedModelServer, tools served by LocalSandbox.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from patcher.agent import Agent, Limits
from patcher.intake import StagedRepo, stage_repo
from patcher.model import ModelConfig, OpenAIModel
from patcher.sandbox import LocalSandbox
from patcher.testing import ScriptedModelServer, delay, reply
from patcher.trace import Redactor, Trace, analyze, current_run_id, read_events
from patcher.trace.log import REDACTED, is_secret_key
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-7Qe2xW9rT4yU1iO8pA5s"
TRICKY = 'pa"ss\\word-42'
"""A configured secret with a quote and a backslash: JSON and repr escape it, splitting its characters."""


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagedRepo]:
    repo = make_repo(tmp_path_factory.mktemp("trace") / "shop",
                     {"shop.py": "def total(items):\n    return sum(i['price'] for i in items)\n"})
    s = stage_repo(str(repo))
    yield s
    s.cleanup()


def escaped_forms(secret: str) -> set[str]:
    once = json.dumps(secret)[1:-1]
    return {secret, once, json.dumps(once)[1:-1], repr(secret)[1:-1], json.dumps(repr(secret)[1:-1])[1:-1]}


def test_planted_keys_never_reach_the_trace(staged: StagedRepo, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    leak = f"API_KEY = '{KEY}'\nhint = {TRICKY}\n"
    steps = [reply(f"Writing {KEY} down.", [("write_file", {"path": "conf.txt", "content": leak}),
                                              ("read_file", {"path": "conf.txt"}),
                                              ("search_code", {"pattern": TRICKY}),
                                              ("run_test", {"command": f"python -c \"print('{KEY}')\""})]),
             reply(f"Done: the key is {KEY} and the hint is {TRICKY}.")]
    trace_path = tmp_path / "run.jsonl"
    with ScriptedModelServer(steps, api_key=KEY) as server:
        model = OpenAIModel(ModelConfig.from_env(base_url=server.base_url, idle_timeout_s=10))
        with LocalSandbox(staged) as box:
            trace = Trace(trace_path, "planted", Redactor([TRICKY]))  # the model key comes from the environment
            result = Agent(model, box, trace, Limits()).run("fix it")
            trace.close()
        model.close()
        sent = json.dumps(server.chat_requests)
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert (result.reason, result.tool_calls) == ("finished", 4) and KEY in (result.final_text or "")
    assert KEY in sent and json.dumps(TRICKY)[1:-1] in sent  # the secrets really went through the run
    text = trace_path.read_text()
    for form in escaped_forms(KEY) | escaped_forms(TRICKY):
        assert form not in text
    events = read_events(trace_path)
    calls = {e["tool"]: e for e in events if e["type"] == "tool_call"}
    assert calls["write_file"]["args"]["content"] == f"API_KEY = '{REDACTED}'\nhint = {REDACTED}\n"
    assert REDACTED in calls["run_test"]["result"] and REDACTED in calls["search_code"]["args"]["pattern"]
    assert events[-1]["content"] == f"Done: the key is {REDACTED} and the hint is {REDACTED}."


def test_values_under_secret_keys_are_redacted_at_any_depth(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t.jsonl", "keys", Redactor(env={}))
    trace.emit("probe", request={"headers": {"X-Api-Key": "k1", "Authorization": "Bearer abc", "Cookie": "s=1",
                                             "Accept": "json"},
                                 "body": [{"access_token": "t1", "nested": {"CLIENT_SECRET": "c1"}}]},
               password="", tokens={"input": 5, "output": 6}, max_tokens=100, token_count=3)
    trace.close()
    [event] = read_events(tmp_path / "t.jsonl")
    headers = event["request"]["headers"]
    assert headers == {"X-Api-Key": REDACTED, "Authorization": REDACTED, "Cookie": REDACTED, "Accept": "json"}
    assert event["request"]["body"] == [{"access_token": REDACTED, "nested": {"CLIENT_SECRET": REDACTED}}]
    assert (event["password"], event["tokens"], event["max_tokens"], event["token_count"]) == (
        "", {"input": 5, "output": 6}, 100, 3)


@pytest.mark.parametrize("key", ["api_key", "API-KEY", "apiKey", "x-api-key", "access_token", "refreshToken",
                                 "password", "db_passwd", "secret", "AWS_SECRET_ACCESS_KEY", "authorization",
                                 "Proxy-Authorization", "cookie", "set-cookie", "GITHUB_TOKEN", "private_key"])
def test_secret_looking_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["tokens", "max_tokens", "token_count", "tokens_in", "key", "path", "content",
                                 "prompt_hash", "stop_raw", "author"])
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_environment_secrets_and_cut_excerpts() -> None:
    r = Redactor(env={"GITHUB_TOKEN": "ghp_abcdef123456", "PATH": "/usr/bin:/bin", "SHORT_TOKEN": "abc"})
    assert r.text("push with ghp_abcdef123456 to /usr/bin:/bin") == f"push with {REDACTED} to /usr/bin:/bin"
    assert r.text("an excerpt cut at ghp_abcd") == f"an excerpt cut at {REDACTED}"
    assert r.text("abc is not a secret") == "abc is not a secret"


def test_each_event_is_one_whole_line_on_disk_before_emit_returns(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    trace = Trace(path, "lines", Redactor(env={}))
    trace.emit("first", note="x" * 100_000)
    assert [e["type"] for e in read_events(path)] == ["first"]  # still open: already written and flushed

    def burst(n: int) -> None:
        for i in range(50):
            trace.emit("burst", worker=n, i=i, pad="y" * 5000)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(burst, range(8)))
    trace.close()
    lines = path.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, 402))
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_run_id_is_in_the_context_and_copied_into_worker_threads(tmp_path: Path) -> None:
    before = current_run_id()
    with Trace(tmp_path / "t.jsonl", "ctx-run", Redactor(env={})) as trace:
        assert current_run_id() == "ctx-run"
        with ThreadPoolExecutor(2) as pool:
            plain = pool.submit(current_run_id).result()
            copied = pool.submit(contextvars.copy_context().run, current_run_id).result()
        assert (plain, copied) == (None, "ctx-run")
        trace.emit("probe")
    assert current_run_id() == before
    with pytest.raises(ValueError, match="is closed"):
        trace.emit("late")


CHILD = """
import sys
from pathlib import Path
from patcher.agent.loop import Agent
from patcher.intake.repo import stage_repo
from patcher.model.client import ModelConfig, OpenAIModel
from patcher.sandbox.local import LocalSandbox
from patcher.trace.log import Trace

base_url, repo, trace_path = sys.argv[1:4]
model = OpenAIModel(ModelConfig(model="scripted-model", base_url=base_url, api_key="unused", idle_timeout_s=120,
                                max_retries=0))
box = LocalSandbox(stage_repo(repo))
trace = Trace(Path(trace_path), "killed-run")
trace.emit("run_start", repo=repo)
Agent(model, box, trace).run("fix it")
trace.emit("run_end", status="not_verified", reason="no_change")
"""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_run_killed_with_sigkill_leaves_every_event_up_to_that_moment(staged: StagedRepo, tmp_path: Path) -> None:
    trace_path = tmp_path / "killed.jsonl"
    reads = [reply(f"Read {n}.", [("read_file", {"path": "shop.py", "start_line": n})]) for n in (1, 2, 3)]
    with ScriptedModelServer([*reads, delay(60, reply("too late"))]) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
        child = subprocess.Popen([sys.executable, "-c", CHILD, server.base_url, str(staged.path), str(trace_path)],
                                 cwd=ROOT, env=env, start_new_session=True)
        try:
            wait_for(lambda: len(server.chat_requests) == 4 or child.poll() is not None, "the slow 4th model call")
            assert child.poll() is None, "the child ended before the slow step"
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=30) == -signal.SIGKILL
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # the child's tool server, orphaned by the kill
            child.wait(timeout=30)
    events = read_events(trace_path)
    assert [(e["type"], e.get("round")) for e in events] == [
        ("run_start", None), ("model_call", 1), ("tool_call", 1), ("model_call", 2), ("tool_call", 2),
        ("model_call", 3), ("tool_call", 3)]
    assert [e["seq"] for e in events] == list(range(1, 8)) and {e["run_id"] for e in events} == {"killed-run"}
    with trace_path.open("a") as f:  # what a kill in the middle of a write would leave
        f.write('{"run_id": "killed-run", "seq": 8, "type": "model_ca')
    assert read_events(trace_path) == events
    ended = analyze(events).ended
    assert ended["complete"] is False and ended["last_event"] == {"seq": 7, "type": "tool_call", "round": 3}

