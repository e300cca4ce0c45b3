"""The notes a small model gets before its first edit, over real HTTP (real openai client, ScriptedModelServer)
and real tools (LocalSandbox): the nudge that answers a give_up once (and a turn ended in prose before any
edit), and the note on a corrected function written in prose. Each test reads what the model server received
and the trace written."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from patcher.agent import Briefing, Limits
from patcher.agent.nudges import defined_functions
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import diff_of
from patcher.testing import Step, reply
from patcher.trace import analyze, render
from tests.support.agent import Run
from tests.support.helpers import make_repo

SOURCE = "def total(items):\n    return sum(i['price'] for i in items)\n"
BRIEFING = Briefing(suspects=["shop.py:2: return sum(i['price'] for i in items)"],
                    failing="E       KeyError: 'price'\n1 failed in 0.01s", test_command="python -m pytest -q tests",
                    functions={"total": "shop.py"})
WHY = "the price key is missing from some items; the fix should skip them"
GIVE_UP = ("give_up", {"reason": WHY})
EDIT = ("edit_file", {"path": "shop.py", "old_text": "i['price']", "new_text": "i.get('price', 0)"})
PROSE = ("The bug is the missing key. Here is the corrected function:\n\n```python\ndef total(items):\n"
         "    return sum(i.get('price', 0) for i in items)\n```\nThis handles items without a price.")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagedRepo]:
    """A shop whose test calls the function (the agent tests' shared one only passes)."""
    repo = make_repo(tmp_path_factory.mktemp("nudges") / "shop", {
        "shop.py": SOURCE, "tests/test_shop.py": "from shop import total\n\n\ndef test_total():\n"
                                                  "    assert total([{'price': 2}, {}]) == 2\n"})
    s = stage_repo(str(repo))
    yield s
    s.cleanup()


@pytest.fixture
def run_agent(run_agent: Callable[..., Run]) -> Callable[..., Run]:
    """The shared run, with this module's briefing (what the task showed) and a round limit of 8."""
    def run(steps: list[Step], briefing: Briefing | None = BRIEFING) -> Run:
        return run_agent(steps, Limits(max_rounds=8), task="Fix the crash: KeyError: 'price' in shop.py, line 2",
                         briefing=briefing)
    return run


def test_a_give_up_before_any_edit_is_answered_once_with_what_is_known(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [GIVE_UP]), reply(None, [GIVE_UP])])
    assert (r.result.reason, r.result.rounds, r.result.tool_calls) == ("gave_up", 2, 2)
    assert WHY in r.result.message
    note = r.last_message(1)
    assert note["role"] == "tool" and note["tool_call_id"] == "call_1"
    text = note["content"]
    assert text.startswith("Not yet: no file has been changed")
    assert WHY in text and "KeyError: 'price'\n1 failed" in text  # its reason, the failing test's last lines
    assert "- shop.py:2: return sum(i['price'] for i in items)" in text  # the top suspect
    assert "smallest edit" in text and "python -m pytest -q tests" in text and "give_up again" in text
    [nudge] = r.of_type("nudge")
    assert (nudge["kind"], nudge["round"], nudge["call_id"], nudge["note"]) == ("give_up", 1, "call_1", text)
    calls = r.of_type("tool_call")
    assert [(c["tool"], c["result"][:9]) for c in calls] == [("give_up", "Not yet: "), ("give_up", "run ended")]
    assert not r.of_type("guard_stop")
    analysis = analyze(r.events)
    assert analysis.nudges == [{"round": 1, "kind": "give_up"}]
    assert "notes before an edit: give_up in round 1" in render(analysis).splitlines()


def test_the_nudge_is_given_once_even_with_rounds_between(run_agent: Callable[..., Run]) -> None:
    look = ("read_file", {"path": "shop.py"})
    r = run_agent([reply(None, [GIVE_UP]), reply(None, [look]), reply(None, [GIVE_UP])])
    assert (r.result.reason, r.result.rounds) == ("gave_up", 3)
    assert len(r.of_type("nudge")) == 1 and r.server.remaining == 0


def test_a_give_up_after_an_edit_ends_the_run_at_once(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [EDIT]), reply(None, [GIVE_UP])])
    assert (r.result.reason, r.result.rounds) == ("gave_up", 2)
    assert not r.of_type("nudge")


def test_an_edit_and_a_give_up_in_one_reply_end_the_run(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [EDIT, GIVE_UP])])
    assert (r.result.reason, r.result.rounds) == ("gave_up", 1) and not r.of_type("nudge")


def test_a_failed_edit_is_no_edit(run_agent: Callable[..., Run]) -> None:
    wrong = ("edit_file", {"path": "shop.py", "old_text": "no such text", "new_text": "x"})
    r = run_agent([reply(None, [wrong]), reply(None, [GIVE_UP]), reply(None, [EDIT]), reply("Fixed.")])
    assert r.result.reason == "finished" and [n["kind"] for n in r.of_type("nudge")] == ["give_up"]


def test_the_nudge_quotes_the_agents_own_failing_run_over_the_base_one(run_agent: Callable[..., Run]) -> None:
    test = ("run_test", {"command": "python -m pytest -q tests"})
    r = run_agent([reply(None, [test]), reply(None, [GIVE_UP]), reply(None, [GIVE_UP])])
    text = r.last_message(2)["content"]
    assert "The failing test's last lines" in text and "1 failed" in text and "KeyError" in text
    assert "0.01s" not in text  # the briefing's (base) output gives way to the agent's own run


def test_a_give_up_written_as_json_in_the_text_is_nudged_too(run_agent: Callable[..., Run]) -> None:
    as_text = json.dumps({"name": "give_up", "arguments": {"reason": WHY}})
    edit = json.dumps({"name": EDIT[0], "arguments": EDIT[1]})
    r = run_agent([reply(as_text), reply(f"<tool_call>{edit}</tool_call>"), reply("Done: the sum skips them.")])
    assert (r.result.reason, r.result.rounds) == ("finished", 3)
    note = r.last_message(1)
    assert note["role"] == "tool" and note["tool_call_id"] == "content_r1_1" and WHY in note["content"]
    assert [c["calls_in_content"] for c in r.of_type("model_call")] == [True, True, False]
    assert [n["kind"] for n in r.of_type("nudge")] == ["give_up"]


def test_a_corrected_function_in_prose_gets_one_note_on_applying_it(run_agent: Callable[..., Run]) -> None:
    edit = json.dumps({"name": EDIT[0], "arguments": EDIT[1]})
    r = run_agent([reply(PROSE), reply(edit), reply("Applied.")])
    assert (r.result.reason, r.result.rounds, r.result.final_text) == ("finished", 3, "Applied.")
    note = r.last_message(1)
    assert note["role"] == "user" and "corrected code for total" in note["content"]
    assert "total is in shop.py" in note["content"] and "edit_file" in note["content"]
    assert "python -m pytest -q tests" in note["content"]
    assert r.agent.messages[2]["content"] == PROSE  # the prose stays in the history, answered by the note
    [nudge] = r.of_type("nudge")
    assert (nudge["kind"], nudge["call_id"], nudge["round"]) == ("prose_code", None, 1)
    assert "+    return sum(i.get('price', 0) for i in items)" in diff_of(r.agent.box)


def test_prose_code_twice_is_noted_once_then_answered_as_a_finish(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(PROSE), reply(PROSE), reply(PROSE)])
    assert (r.result.reason, r.result.rounds) == ("finished", 3)
    assert [n["kind"] for n in r.of_type("nudge")] == ["prose_code", "finished"]


def test_prose_code_after_an_edit_is_a_summary(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [EDIT]), reply(PROSE)])
    assert (r.result.reason, r.result.rounds) == ("finished", 2) and not r.of_type("nudge")


def test_a_corrected_function_shown_beside_a_test_run_gets_the_note_after_the_results(
        run_agent: Callable[..., Run]) -> None:
    test = ("run_test", {"command": "python -m pytest -q tests"})
    r = run_agent([reply(PROSE, [test]), reply(PROSE, [test]), reply(None, [EDIT]), reply("Applied.")])
    assert (r.result.reason, r.result.rounds) == ("finished", 4)
    after_first = r.server.chat_requests[1]["messages"]
    assert [m["role"] for m in after_first[-2:]] == ["tool", "user"]
    assert "corrected code for total" in after_first[-1]["content"]
    assert r.server.chat_requests[2]["messages"][-1]["role"] == "tool"  # given once: the second reply gets none
    assert [(n["kind"], n["round"]) for n in r.of_type("nudge")] == [("prose_code", 1)]


def test_code_shown_beside_an_edit_gets_no_note(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(PROSE, [EDIT]), reply("Applied.")])
    assert (r.result.reason, r.result.rounds) == ("finished", 2) and not r.of_type("nudge")


def test_an_empty_finish_is_answered_without_quoting_nothing(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(""), reply(None, [EDIT]), reply("Fixed.")])
    text = r.last_message(1)["content"]
    assert text.startswith("You ended your turn without changing any file") and "What you wrote" not in text


GAVE_UP_IN_PROSE = "I have to give_up with the reason: the crash cannot be fixed without changing the tests."


def test_a_finish_in_prose_before_any_edit_is_answered_like_a_give_up(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(GAVE_UP_IN_PROSE), reply(None, [EDIT]), reply("Fixed.")])
    assert (r.result.reason, r.result.rounds, r.result.final_text) == ("finished", 3, "Fixed.")
    note = r.last_message(1)
    assert note["role"] == "user" and note["content"].startswith("You ended your turn without changing any file")
    text = note["content"]
    assert GAVE_UP_IN_PROSE in text and "KeyError: 'price'\n1 failed" in text
    assert "- shop.py:2: return sum(i['price'] for i in items)" in text and "smallest edit" in text
    assert "call give_up with the reason" in text and "give_up again" not in text
    [nudge] = r.of_type("nudge")
    assert (nudge["kind"], nudge["round"], nudge["call_id"]) == ("finished", 1, None)
    assert r.agent.messages[2]["content"] == GAVE_UP_IN_PROSE  # the prose stays in the history
    assert analyze(r.events).nudges == [{"round": 1, "kind": "finished"}]


def test_a_second_finish_without_an_edit_ends_the_run(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply("I could not find the bug. ```text\nno code here\n```"), reply("Still nothing.")],
                  briefing=None)
    assert (r.result.reason, r.result.rounds, r.result.final_text) == ("finished", 2, "Still nothing.")
    assert [n["kind"] for n in r.of_type("nudge")] == ["finished"] and r.server.remaining == 0


@pytest.mark.parametrize("order", ["finish_then_give_up", "give_up_then_finish"])
def test_a_finish_and_a_give_up_share_the_one_note(run_agent: Callable[..., Run], order: str) -> None:
    ends = [reply(GAVE_UP_IN_PROSE), reply(None, [GIVE_UP])]
    r = run_agent(ends if order == "finish_then_give_up" else ends[::-1])
    assert r.result.reason == ("gave_up" if order == "finish_then_give_up" else "finished")
    assert r.result.rounds == 2 and len(r.of_type("nudge")) == 1


def test_a_long_finish_is_quoted_short(run_agent: Callable[..., Run]) -> None:
    essay = "I looked at everything. " * 200
    r = run_agent([reply(essay), reply("ok")])
    [nudge] = r.of_type("nudge")
    assert len(nudge["note"]) < 1500 and nudge["note"].count("I looked at everything.") < 30


def test_a_finish_after_an_edit_ends_the_run_without_a_note(run_agent: Callable[..., Run]) -> None:
    r = run_agent([reply(None, [EDIT]), reply("Fixed: the sum skips items without a price.")])
    assert (r.result.reason, r.result.rounds) == ("finished", 2) and not r.of_type("nudge")


@pytest.mark.parametrize(("text", "names"), [
    (PROSE, ["total"]),
    ("```py\nasync def fetch():\n    pass\n\ndef helper(x):\n    return x\n```", ["fetch", "helper"]),
    ("```python\ndef broken(:\n```", []),
    ("```json\n{\"def\": 1}\n```", []),
    ("def total(items): return 0   (not in a block)", []),
])
def test_defined_functions_reads_only_code_blocks_that_parse(text: str, names: list[str]) -> None:
    assert defined_functions(text) == names


RAW_EDIT = ('{"path": "shop.py", "old_text": "def total(items):\n    return sum(i[\'price\'] for i in items)", '
            '"new_text": "def total(items):\n    return sum(i.get(\'price\', 0) for i in items)"}')
"""edit_file arguments with the line breaks of the code left raw inside the JSON strings."""


@pytest.mark.parametrize("written", ["text", "native"])
def test_a_call_with_raw_newlines_in_its_code_runs(run_agent: Callable[..., Run], written: str) -> None:
    """Small models write code into JSON strings with real line breaks; those calls still run."""
    assert "\n" in RAW_EDIT and "\\n" not in RAW_EDIT
    first = (reply('```json\n{"name": "edit_file", "arguments": ' + RAW_EDIT + '}\n```') if written == "text"
             else reply(None, [("edit_file", RAW_EDIT)]))
    r = run_agent([first, reply("Applied.")])
    assert r.result.reason == "finished"
    assert "+    return sum(i.get('price', 0) for i in items)" in diff_of(r.agent.box)
    [call] = r.of_type("tool_call")
    assert not call["is_error"] and call["repaired"] == (written == "native")
