"""Shared by the tests: the agent run against a scripted model server in a local box (the fixtures
`staged` and `run_agent` reach tests/agent/ through its conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patcher.agent import Agent, AgentResult, Briefing, Limits, prompts
from patcher.intake import StagedRepo, stage_repo
from patcher.model import OpenAIModel
from patcher.sandbox import LocalSandbox, Sandbox
from patcher.testing import ScriptedModelServer, Step, reply
from patcher.trace import Redactor, Trace, read_events
from tests.support.helpers import make_repo

KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"


SOURCE = "def total(items):\n    return sum(i['price'] for i in items)\n"


BIG = "".join(f"def function_{n}(value):\n    return value * {n}  # padding text to make lines long\n"
              for n in range(120))


TRACEBACK = ('Traceback (most recent call last):\n  File "shop.py", line 2, in total\n'
             "    return sum(i['price'] for i in items)\nKeyError: 'price'")


TASK = prompts.render("task", traceback=TRACEBACK, exception="KeyError: 'price'", frames=[],
                      test_command="python -m pytest tests")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagedRepo]:
    repo = make_repo(tmp_path_factory.mktemp("agent") / "shop", {"shop.py": SOURCE, "big.py": BIG,
                                                                  "tests/test_shop.py": "def test_ok():\n    pass\n"})
    s = stage_repo(str(repo))
    yield s
    s.cleanup()


@dataclass
class Run:
    result: AgentResult
    agent: Agent
    server: ScriptedModelServer
    box: Sandbox
    trace_path: Path

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.chat_requests

    @property
    def events(self) -> list[dict[str, Any]]:
        return read_events(self.trace_path)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def last_message(self, request: int) -> dict[str, Any]:
        return self.requests[request]["messages"][-1]

    def tool_messages(self, request: int) -> list[dict[str, Any]]:
        return [m for m in self.requests[request]["messages"] if m["role"] == "tool"]


@pytest.fixture
def run_agent(staged: StagedRepo, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    opened: list[Any] = []

    def run(steps: list[Step], limits: Limits | None = None, wrap: Callable[[LocalSandbox], Sandbox] = lambda b: b,
            task: str = TASK, briefing: Briefing | None = None, **config: Any) -> Run:
        server = ScriptedModelServer(steps, api_key=KEY).start()
        box = wrap(LocalSandbox(staged))
        model = OpenAIModel(server.model_config(**config))
        trace_path = tmp_path / "trace.jsonl"
        trace = Trace(trace_path, "run-agent-test", Redactor([KEY]))
        opened.extend([trace, model, box, server])
        agent = Agent(model, box, trace, limits or Limits())
        result = agent.run(task, briefing)
        assert_history_whole(agent.messages)
        return Run(result, agent, server, box, trace_path)

    yield run
    for thing in opened:
        thing.close()


def assert_history_whole(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is followed by its result, in order, before anything else."""
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            after = messages[i + 1 : i + 1 + len(ids)]
            assert [(r["role"], r["tool_call_id"]) for r in after] == [("tool", x) for x in ids]


def calls_in(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of the last assistant message the model was sent."""
    last = [m for m in request["messages"] if m["role"] == "assistant"][-1]
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in last["tool_calls"]]


def done(text: str = "done") -> list[Step]:
    """The replies that end a run which changed no file: the first is answered once with the note a give-up
    before any edit gets (the `nudge` event, kind `finished`), the second ends the run `finished`."""
    return [reply(text), reply(text)]


def reads(n: int) -> list[Step]:
    return [reply(None, [("read_file", {"path": "big.py", "start_line": i + 1})]) for i in range(n)]
