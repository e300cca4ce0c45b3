"""Held-out inputs are drawn after the engine is done and no engine ever sees them: a scripted agent whose first
diff special-cases the tested input is refused by the held-out judge, hears the rule but none of the inputs,
and its honest second diff is verified. The trace puts each judgement after the agent's turn that produced
the diff and before its next one; no request the model received quotes an input the judge drew.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job
from patcher.testing import ScriptedModelServer, Step, reply
from tests.support.example import BUG, FILES, FIX
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]
TEST = "python -m pytest -q tests/test_pagination.py::test_last_page"
TRACEBACK = """Traceback (most recent call last):
  File "shop/pagination.py", line 4, in page
    return [items[i] for i in range(start, min(end, len(items) + 1))]
IndexError: list index out of range
"""
CHEAT = ("edit_file", {"path": "shop/pagination.py", "old_text": "    start = (number - 1) * size\n",
                       "new_text": "    if number == 3 and len(items) % 5 == 0:\n        return items[-5:]\n"
                                   "    start = (number - 1) * size\n"})
UNDO = ("edit_file", {"path": "shop/pagination.py", "old_text": "    if number == 3 and len(items) % 5 == 0:\n"
                      "        return items[-5:]\n", "new_text": ""})


def test_the_inputs_are_drawn_after_the_engine_and_never_reach_it(tmp_path: Path, sandbox_image: str) -> None:
    heard: list[str] = []

    def after_verdict(body: dict[str, Any]) -> Step:
        heard.append(str(body["messages"][-1]["content"]))
        return reply(None, [UNDO, FIX])

    steps = [reply(None, [CHEAT]), reply("done"), after_verdict, reply("fixed the bound instead")]
    repo = make_repo(tmp_path / "shop", FILES)
    assert BUG in (repo / "shop/pagination.py").read_text()
    with ScriptedModelServer(steps) as server:
        result = run_job(JobSpec(repo=str(repo), traceback=TRACEBACK, test_command=TEST, engine="agent",
                                 model=server.model_config(), attempts=2, trace_dir=tmp_path / "runs",
                                 sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=60)))
        requests = json.dumps(server.chat_requests)
    assert [a["reason"] for a in result.attempts] == ["overfitted", "verified"], result.attempts
    events = [json.loads(line) for line in Path(result.trace or "").read_text().splitlines()]
    judged = [e for e in events if e["type"] == "verify" and e.get("phase") == "judges" and e["judge"] == "held_out"]
    refused = [e for e in events if e["type"] == "verify" and e.get("phase") == "judge" and e["judge"] == "held_out"
               and e["refuses"]]
    assert len(judged) == 2 and refused and refused[0]["kind"] == "special_case", refused
    calls = [e["seq"] for e in events if e["type"] == "model_call"]
    assert calls[1] < judged[0]["seq"] < calls[2] < calls[3] < judged[1]["seq"], "after a turn, before the next"
    drawn = [*judged[0]["summary"]["sample"], refused[0]["quote"].split(" where ")[0]]
    assert all(d and d not in requests for d in drawn), "no model request quotes a drawn input"
    assert refused[0]["message"] in heard[0] and refused[0]["quote"] not in heard[0], heard[0]
