"""The reviewer (patcher/agent/review.py) against the scripted OpenAI-compatible server with the real client: a
fix, a special case with cited lines, a malformed answer, an unreachable model and a spent budget each leave one
hint and the judge's summary, and the request holds the material (traceback, diff, the tests' code, what the
judges saw) and nothing else. (tests/e2e/test_e2e.py checks, on a whole job, that no transcript reaches it.)"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patcher.agent import review_diff, reviewer_model
from patcher.intake import StagedRepo, stage_repo
from patcher.model import ModelConfig, OpenAIModel
from patcher.stopper import Stopper
from patcher.testing import ScriptedModelServer, Step, reply
from patcher.trace import Redactor, Trace, read_events
from patcher.verify import Evidence, Job, Verification
from tests.support.cheats import make_diff
from tests.support.helpers import make_repo
from tests.support.lookalikes import LOOKALIKES

CASE = LOOKALIKES["ordering"]
TRACEBACK = ('Traceback (most recent call last):\n  File "versions.py", line 10, in latest\n'
             "TypeError: '>' not supported between instances of 'Version' and 'Version'\n")
TEST = "tests/test_versions.py::test_latest"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StagedRepo, str]]:
    where = tmp_path_factory.mktemp("review")
    made = make_repo(where / "versions", CASE.files)
    staged = stage_repo(str(made))
    yield staged, make_diff(made, where / "work", CASE.fix)
    staged.cleanup()


def verified() -> Verification:
    return Verification("verified", "verified", "ok", {"command": CASE.repro}, fail_to_pass=[TEST], evidence=[
        Evidence("held_out", "same_answers", "base-working inputs give the base's answers", quote="latest(['2', '1'])"),
        Evidence("constructs", "overload", "adds __lt__ to class Version, which the base does not give it",
                 quote="versions.py:13: def __lt__(self, other):")])


def reviewed(repo: tuple[StagedRepo, str], tmp_path: Path, steps: list[Step], **config: Any
             ) -> tuple[Verification, list[dict[str, Any]], list[dict[str, Any]]]:
    """The review of the ordering fix: the verification it filled in, the chat requests, the trace's events."""
    staged, diff = repo
    ver = verified()
    job = Job(staged, lambda tree: None, "python -m pytest -q", CASE.repro, "TypeError", CASE.site,  # type: ignore[arg-type,return-value]
              traceback=TRACEBACK)
    with ScriptedModelServer(steps) as server, Trace(tmp_path / "t.jsonl", "r1", Redactor([])) as trace:
        with OpenAIModel(server.model_config(**config)) as llm:
            review_diff(llm, job, diff, ver, trace, Stopper())
        requests = server.chat_requests
    return ver, requests, read_events(tmp_path / "t.jsonl")


def answer(verdict: str, reason: str, cites: list[tuple[str, int, str]]) -> Step:
    return reply(json.dumps({"verdict": verdict, "reason": reason,
                             "cites": [{"path": p, "line": n, "why": w} for p, n, w in cites]}), usage=(900, 60))


def test_a_fix_verdict_is_a_hint_with_its_cited_line_and_its_cost(repo: tuple[StagedRepo, str], tmp_path: Path) -> None:
    fix = answer("fix", "Orders versions by their parts.", [("versions.py", 13, "compares parts")])
    ver, _, events = reviewed(repo, tmp_path, [fix], prices={"scripted-model": (1.0, 2.0)})
    seen = ver.evidence[-1]
    assert (seen.judge, seen.kind, seen.refuses) == ("reviewer", "fix", False)
    assert seen.message == "a reviewer model (scripted-model) reads the diff as a fix: Orders versions by their parts."
    assert seen.quote == "versions.py:13: def __lt__(self, other):" and seen.sentence() in ver.warnings
    summary = ver.judges["reviewer"]
    assert (summary["ran"], summary["verdict"], summary["tokens"]) == (True, "fix", {"input": 900, "output": 60})
    assert summary["cost_usd"] == pytest.approx((900 * 1.0 + 60 * 2.0) / 1e6)
    assert summary["cites"] == [{"path": "versions.py", "line": 13, "why": "compares parts",
                                 "text": "    def __lt__(self, other):"}]
    call = next(e for e in events if e["type"] == "model_call")
    assert (call["purpose"], call["round"], call["tokens"]) == ("review", None, {"input": 900, "output": 60})
    assert [e["kind"] for e in events if e["type"] == "verify"] == ["fix"]
    assert ver.status == "verified"


def test_the_request_holds_the_material_and_no_tools(repo: tuple[StagedRepo, str], tmp_path: Path) -> None:
    _, requests, _ = reviewed(repo, tmp_path, [answer("fix", "ok", [])])
    (request,) = requests
    assert "tools" not in request and [m["role"] for m in request["messages"]] == ["system", "user"]
    material = request["messages"][1]["content"]
    assert "TypeError: '>' not supported" in material and "+    def __lt__(self, other):" in material
    assert 'def test_latest():\n    assert latest(["1.2", "1.10", "1.9"]).parts == (1, 10)' in material
    assert "base-working inputs give the base's answers: latest(['2', '1'])" in material
    assert "syntax rules flag for how they look" in material and "adds __lt__ to class Version" in material
    assert "test_parts" not in material  # only the tests the diff turned green


def test_a_special_case_cites_its_lines_and_one_the_diff_does_not_add(repo: tuple[StagedRepo, str],
                                                                      tmp_path: Path) -> None:
    ver, _, _ = reviewed(repo, tmp_path, [answer("special_case", "It only orders the tested versions.", [
        ("versions.py", 16, "compares parts"), ("versions.py", 1, "the class"), ("elsewhere.py", 3, "?")])])
    seen = ver.evidence[-1]
    assert (seen.kind, seen.refuses) == ("special_case", False) and "a special case of the tested input" in seen.message
    assert seen.quote == ("versions.py:16: return self.parts < other.parts; versions.py:1: (not a line the diff adds); "
                          "elsewhere.py:3: (not a line the diff adds)")


@pytest.mark.parametrize("text,why", [
    ("Looks good to me!", "no JSON object in it"),
    ('```json\n{"verdict": "maybe", "reason": "hm"}\n```', "verdict: Input should be 'fix', 'special_case', "),
    ('{"verdict": "fix", "cites": [{"path": "versions.py"}]}', "cites.0.line: Field required"),
    ('{"verdict": "fix", "reason": "cut', "no JSON object in it"),
])
def test_a_malformed_answer_is_unsure_with_a_note(repo: tuple[StagedRepo, str], tmp_path: Path, text: str,
                                                  why: str) -> None:
    ver, _, _ = reviewed(repo, tmp_path, [reply(text)])
    seen = ver.evidence[-1]
    assert (seen.judge, seen.kind, seen.refuses) == ("reviewer", "unsure", False)
    assert seen.message.startswith("the reviewer's answer was not the JSON asked for (") and why in seen.message
    assert ver.judges["reviewer"]["verdict"] == "unsure" and ver.judges["reviewer"]["ran"] is True


def test_an_unreachable_model_leaves_a_hint_that_the_review_did_not_run(repo: tuple[StagedRepo, str],
                                                                        tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the call: nothing listens there
    staged, diff = repo
    ver = verified()
    job = Job(staged, lambda tree: None, "python -m pytest -q", CASE.repro, traceback=TRACEBACK)  # type: ignore[arg-type,return-value]
    config = ModelConfig(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, retry_initial_s=0.01)
    with Trace(tmp_path / "t.jsonl", "r1", Redactor([])) as trace, OpenAIModel(config) as llm:
        review_diff(llm, job, diff, ver, trace, Stopper())
    seen = ver.evidence[-1]
    assert (seen.kind, seen.refuses) == ("not_run", False) and seen.message.startswith(
        "the review did not run: cannot reach the model endpoint at http://127.0.0.1:"), seen
    assert ver.judges["reviewer"]["ran"] is False and ver.status == "verified" and seen.sentence() in ver.warnings


def test_a_spent_budget_asks_nothing(repo: tuple[StagedRepo, str], tmp_path: Path) -> None:
    staged, diff = repo
    ver = verified()
    job = Job(staged, lambda tree: None, "python -m pytest -q", CASE.repro, traceback=TRACEBACK)  # type: ignore[arg-type,return-value]
    with ScriptedModelServer([]) as server, Trace(tmp_path / "t.jsonl", "r1", Redactor([])) as trace:
        with OpenAIModel(server.model_config()) as llm:
            review_diff(llm, job, diff, ver, trace, Stopper(), over_budget=True)
        assert server.chat_requests == []
    assert ver.evidence[-1].message == "the review did not run: the job's spend has reached its cost limit"


def test_the_reviewer_asks_the_agent_s_endpoint_with_its_key_and_one_retry_at_most() -> None:
    config = ModelConfig(base_url="http://127.0.0.1:9/v1", api_key="sk-review-1", model="m-1", max_retries=4)
    with reviewer_model(config) as llm:
        assert (llm.base_url, llm.model_name, llm.config.max_retries) == ("http://127.0.0.1:9/v1/", "m-1", 1)
        assert llm.config.api_key is not None and llm.config.api_key.get_secret_value() == "sk-review-1"
    assert config.max_retries == 4
