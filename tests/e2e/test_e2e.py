"""End to end on real Docker: traceback in, scripted model over real HTTP, fail-closed verified diff out.

The scenarios (a)-(i) of issue 4. Every result is checked for the contract's one rule: a diff only
when the status is `verified`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job, verify_patch
from patcher.result import JobResult
from patcher.testing import ScriptedModelServer, Step, reply
from tests.support.example import BUG, FILES, FIX, PAGINATION, PRODUCTION_TB
from tests.support.helpers import git, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop", FILES)


@pytest.fixture(scope="module")
def pytest_traceback(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The real pytest output of the failing suite (trusted code, run on the host)."""
    where = make_repo(tmp_path_factory.mktemp("tb") / "shop", FILES)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=where,
                         capture_output=True, text=True)
    assert "IndexError" in out.stdout and "FAILED tests/test_pagination.py::test_last_page" in out.stdout
    return out.stdout


def run(repo: Path, traceback: str, steps: list[Step], image: str, tmp_path: Path, test: str | None = None,
        attempts: int = 1) -> tuple[JobResult, ScriptedModelServer]:
    """One job; one verification unless `attempts` says more (the scripts here end after one)."""
    with ScriptedModelServer(steps) as server:
        spec = JobSpec(repo=str(repo), traceback=traceback, test_command=test, model=server.model_config(),
                       engine="agent", sandbox=SandboxConfig(image=image, test_timeout_s=60),
                       trace_dir=tmp_path / "runs", attempts=attempts)
        result = run_job(spec)
    assert (result.diff is not None) == (result.status == "verified"), result
    return result, server


def events(result: JobResult) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(result.trace or "").read_text().splitlines()]


def test_a_correct_fix_is_verified_and_applies_to_the_users_tree(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    result, server = run(repo, pytest_traceback, [reply(None, [FIX]), reply("Fixed the bound.")], sandbox_image,
                         tmp_path)
    assert (result.status, result.reason, result.exit_code) == ("verified", "verified", 0), result.message
    ver = result.verification
    assert ver["reproduction"] == {"command": "python -m pytest -q tests/test_pagination.py::test_last_page",
                                   "before": "failed", "after": "passed"}
    assert ver["fail_to_pass"] == ["tests/test_pagination.py::test_last_page"]
    assert ver["pass_to_pass"] == {"total": 2, "regressions": [], "command": "python -m pytest -q"}
    assert ver["flaky"] == []
    assert result.files_changed == ["shop/pagination.py"]
    assert result.diff and "+    return [items[i] for i in range(start, min(end, len(items)))]" in result.diff
    (tmp_path / "fix.diff").write_text(result.diff)
    git(repo, "apply", str(tmp_path / "fix.diff"))
    after = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo,
                           capture_output=True, text=True)
    assert after.returncode == 0, after.stdout
    kinds = [e["type"] for e in events(result)]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end" and "model_call" in kinds and "verify" in kinds
    first_task = server.chat_requests[0]["messages"][1]["content"]
    assert "shop/pagination.py:4" in first_task and BUG in first_task  # the frames' source, up front


def test_b_a_fix_that_breaks_another_test_is_a_regression(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    breaks = ("edit_file", {"path": "shop/pagination.py", "old_text": "(len(items) + size - 1) // size",
                                          "new_text": "len(items) // size"})
    result, _ = run(repo, pytest_traceback, [reply(None, [FIX, breaks]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason, result.exit_code) == ("not_verified", "regression", 1)
    assert result.verification["pass_to_pass"]["regressions"] == ["tests/test_pagination.py::test_total"]
    assert result.diff is None and result.as_json()["diff_sha256"] is None


def test_c_editing_an_existing_test_is_a_policy_violation(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    weaken = ("edit_file", {"path": "tests/test_pagination.py", "old_text": "[20, 21, 22, 23, 24]",
                            "new_text": "page(list(range(25)), 3)"})
    result, _ = run(repo, pytest_traceback, [reply(None, [weaken]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("not_verified", "policy_violation")
    assert "tests/test_pagination.py: existing tests may not be modified" in result.message


@pytest.mark.parametrize("path,content", [
    ("conftest.py", "def pytest_collection_modifyitems(items):\n    items[:] = [i for i in items "
                    "if 'last' not in i.name]\n"),
    ("pytest.ini", "[pytest]\naddopts = --deselect tests/test_pagination.py::test_last_page\n"),
])
def test_d_config_that_deselects_the_failing_test_is_not_verified(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path, path: str, content: str) -> None:
    result, _ = run(repo, pytest_traceback, [reply(None, [("write_file", {"path": path, "content": content})]),
                                             reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("not_verified", "policy_violation"), result.message
    assert path in result.message


def test_e_a_process_that_exits_0_without_running_tests_is_not_verified(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    bail = ("write_file", {"path": "shop/__init__.py", "content": "import os\n\nos._exit(0)\n"})
    result, _ = run(repo, pytest_traceback, [reply(None, [bail]), reply("done")], sandbox_image, tmp_path)
    # the harness's stream never saw the session end: the first run is refused; os._exit is also a review hint
    assert (result.status, result.reason) == ("not_verified", "report_tampered"), result.message
    assert result.verification["reproduction"]["after"] == "not_run"
    assert {"judge": "constructs", "kind": "probe", "refuses": False, "reason": None,
            "message": "hooks interpreter exit", "quote": "shop/__init__.py:3: os._exit(0)"} \
        in result.verification["evidence"]
    assert "hooks interpreter exit: shop/__init__.py:3: os._exit(0)" in result.warnings


def test_the_reviewer_reads_the_verified_diff_in_a_fresh_context(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    plan = "PLAN-7f3a: the end bound runs one past the list"
    verdict = reply(json.dumps({"verdict": "fix", "reason": "Stops at the end of the list.",
                                "cites": [{"path": "shop/pagination.py", "line": 4, "why": "the bound"}]}))
    result, server = run(repo, pytest_traceback, [reply(plan, [FIX]), reply("Fixed the bound."), verdict],
                         sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    *agent, review = server.chat_requests
    assert plan in json.dumps(agent[-1]) and all("tools" in r for r in agent) and "tools" not in review
    sent = json.dumps(review)
    assert plan not in sent and "Fixed the bound." not in sent and '"role": "tool"' not in sent  # no transcript
    assert "min(end, len(items))" in sent and "IndexError: list index out of range" in sent
    assert "def test_last_page():" in sent
    judged = result.verification["judges"]["reviewer"]
    assert (judged["ran"], judged["verdict"], judged["reason"]) == (True, "fix", "Stops at the end of the list.")
    line = "shop/pagination.py:4: return [items[i] for i in range(start, min(end, len(items)))]"
    assert f"a reviewer model (scripted-model) reads the diff as a fix: Stops at the end of the list.: {line}" \
        in result.warnings
    assert result.agent.rounds == 2 and [e.get("purpose") for e in events(result) if e["type"] == "model_call"] == [
        None, None, "review"]


def test_f_no_change_is_no_change(repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    # the first finish before any edit is answered once with a note to try; the second one ends the run
    result, _ = run(repo, pytest_traceback, [reply("I could not find the bug.")] * 2, sandbox_image, tmp_path)
    assert (result.status, result.reason, result.exit_code) == ("not_verified", "no_change", 1)
    assert result.agent.rounds == 2


def test_g_a_traceback_that_does_not_reproduce_spends_no_agent_time(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    passing = "python -m pytest -q tests/test_pagination.py::test_first_page"
    result, server = run(repo, pytest_traceback, [reply("never asked")], sandbox_image, tmp_path, test=passing)
    assert (result.status, result.reason, result.exit_code) == ("not_verified", "not_reproduced", 1)
    assert result.verification["reproduction"] == {"command": passing, "before": "passed", "after": "not_run"}
    assert server.chat_requests == [] and result.agent.rounds == 0


def test_g_a_failure_with_another_exception_type_does_not_reproduce(
        repo: Path, sandbox_image: str, tmp_path: Path) -> None:
    tb = PRODUCTION_TB.replace("IndexError: list index out of range", "KeyError: 'page'")
    result, server = run(repo, tb, [], sandbox_image, tmp_path, test="python -m pytest -q tests")
    assert result.reason == "not_reproduced" and "not with KeyError" in result.message
    assert server.chat_requests == []


def test_h_an_unreachable_model_endpoint_exits_3_with_one_line(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    (tmp_path / "tb.txt").write_text(pytest_traceback)
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test",
           "PATCHER_MODEL": "gpt-test", "PATCHER_HOME": str(tmp_path / "home")}
    out = subprocess.run([str(ROOT / ".venv/bin/patcher"), "fix", str(repo), "--traceback", str(tmp_path / "tb.txt"),
                          "--json", "--engine", "agent"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 3, out.stderr
    result = json.loads(out.stdout)
    assert (result["status"], result["reason"], result["diff"]) == ("error", "model_error", None)
    assert "cannot reach the model endpoint at http://127.0.0.1:9/v1" in result["message"]
    assert "\n" not in result["message"]


def test_i_a_raw_production_traceback_with_deployed_paths_and_test_is_verified(
        repo: Path, sandbox_image: str, tmp_path: Path) -> None:
    result, server = run(repo, PRODUCTION_TB, [reply(None, [FIX]), reply("done")], sandbox_image, tmp_path,
                         test="python -m pytest -q tests/test_pagination.py")
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.verification["fail_to_pass"] == ["tests/test_pagination.py::test_last_page"]
    first_task = server.chat_requests[0]["messages"][1]["content"]
    assert "shop/pagination.py:4" in first_task  # /srv/shop/releases/…/shop/pagination.py mapped into the repo


ONCE_PER_BOX = ("import os\n\n\ndef _first_call_in_this_box():\n    if os.path.exists('/tmp/.seen'):\n"
                "        return False\n    open('/tmp/.seen', 'w').close()\n    return True\n\n\n")


def test_a_fix_that_passes_only_on_a_rerun_is_flaky_not_verified(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    flaky_fix = PAGINATION.replace(BUG, "min(end, len(items) + int(_first_call_in_this_box()))")
    write = ("write_file", {"path": "shop/pagination.py", "content": ONCE_PER_BOX + flaky_fix})
    result, _ = run(repo, pytest_traceback, [reply(None, [write]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("not_verified", "tests_failed"), result.message
    assert result.verification["reproduction"]["after"] == "flaky" and "flaky" in result.message


def test_a_test_the_diff_makes_flaky_is_a_regression(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    flaky_total = PAGINATION.replace(BUG, "min(end, len(items))").replace(
        "return (len(items) + size - 1) // size", "return (len(items) + size - 1) // size + _first_call_in_this_box()")
    write = ("write_file", {"path": "shop/pagination.py", "content": ONCE_PER_BOX + flaky_total})
    result, _ = run(repo, pytest_traceback, [reply(None, [write]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("not_verified", "regression"), result.message
    assert result.verification["pass_to_pass"]["regressions"] == ["tests/test_pagination.py::test_total"]


def test_the_agent_writes_the_reproduction_when_none_is_given(
        repo: Path, sandbox_image: str, tmp_path: Path) -> None:
    repro = ("write_file", {"path": "tests/test_repro_page3.py", "content": "from shop.pagination import page\n\n\n"
                            "def test_page_3():\n    assert page(list(range(25)), 3)[-1] == 24\n"})
    result, _ = run(repo, PRODUCTION_TB, [reply(None, [repro, FIX]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    ver = result.verification
    assert ver["reproduction"]["command"] == "python -m pytest -q tests/test_repro_page3.py"
    assert ver["reproduction"]["before"] == "failed" and ver["fail_to_pass"] == [
        "tests/test_repro_page3.py::test_page_3"]


def test_an_agent_written_test_that_passes_on_the_base_proves_nothing(
        repo: Path, sandbox_image: str, tmp_path: Path) -> None:
    idle = ("write_file", {"path": "tests/test_idle.py", "content": "def test_nothing():\n    assert True\n"})
    result, _ = run(repo, PRODUCTION_TB, [reply(None, [idle, FIX]), reply("done")], sandbox_image, tmp_path)
    assert (result.status, result.reason) == ("not_verified", "not_reproduced"), result.message


def test_patcher_verify_is_a_merge_gate(repo: Path, pytest_traceback: str, sandbox_image: str,
                                        tmp_path: Path) -> None:
    good = (f"diff --git a/shop/pagination.py b/shop/pagination.py\n--- a/shop/pagination.py\n"
            f"+++ b/shop/pagination.py\n@@ -1,7 +1,7 @@\n def page(items, number, size=10):\n"
            f"     start = (number - 1) * size\n     end = start + size\n"
            f"-    return [items[i] for i in range(start, {BUG})]\n"
            f"+    return [items[i] for i in range(start, min(end, len(items)))]\n"
            f" \n \n def total_pages(items, size=10):\n")
    cfg = SandboxConfig(image=sandbox_image)
    ok = verify_patch(str(repo), good, traceback=pytest_traceback, sandbox=cfg, trace_dir=tmp_path)
    assert (ok.status, ok.exit_code, ok.diff) == ("verified", 0, good), ok.message
    wrong = good.replace("min(end, len(items))", "min(end, len(items) + 2)")
    bad = verify_patch(str(repo), wrong, traceback=pytest_traceback, sandbox=cfg, trace_dir=tmp_path)
    assert (bad.status, bad.reason, bad.exit_code, bad.diff) == ("not_verified", "tests_failed", 1, None)
    stale = good.replace("start = (number - 1) * size", "start = number * size")
    off = verify_patch(str(repo), stale, traceback=pytest_traceback, sandbox=cfg, trace_dir=tmp_path)
    assert (off.reason, off.exit_code) == ("bad_input", 2) and "does not apply" in off.message


def test_the_agent_hears_why_its_first_diff_was_rejected_and_recovers(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    breaks = ("edit_file", {"path": "shop/pagination.py", "old_text": "(len(items) + size - 1) // size",
                            "new_text": "len(items) // size"})
    undo = ("edit_file", {"path": "shop/pagination.py", "old_text": "len(items) // size",
                          "new_text": "(len(items) + size - 1) // size"})

    def after_verdict(body: dict[str, Any]) -> Step:
        note = body["messages"][-1]
        assert note["role"] == "user" and "Verification rejected your change (attempt 1 of 3): regression" in \
            note["content"], note
        assert "tests/test_pagination.py::test_total" in note["content"]
        return reply(None, [undo])

    steps = [reply(None, [FIX, breaks]), reply("done"), after_verdict, reply("Put total_pages back.")]
    result, server = run(repo, pytest_traceback, steps, sandbox_image, tmp_path, attempts=3)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert server.remaining == 0
    first, second = result.attempts
    assert (first["attempt"], first["reason"], second["attempt"], second["reason"]) == (1, "regression", 2, "verified")
    assert first["diff_sha256"] != second["diff_sha256"] == result.diff_sha256
    assert result.diff and "len(items) // size" not in result.diff, "the rejected change never leaves"
    assert [e["reason"] for e in events(result) if e["type"] == "attempt"] == ["regression", "verified"]
    assert result.agent.rounds == 4


def test_one_strike_a_diff_that_games_the_verification_ends_the_job_untold_why(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    # fixed only where a tests directory is beside the working directory: the second judge (from an empty one) sees
    # the crash, whatever the spelling
    cheat = ("edit_file", {"path": "shop/pagination.py", "old_text": BUG,
                           "new_text": "min(end, len(items) + (0 if __import__('os').path.isdir('tests') else 1))"})
    steps = [reply(None, [cheat]), reply("done"), reply(None, [FIX]), reply("done again")]
    result, server = run(repo, pytest_traceback, steps, sandbox_image, tmp_path, attempts=3)
    assert (result.status, result.reason, result.diff) == ("not_verified", "behaves_differently", None)
    assert [a["reason"] for a in result.attempts] == ["behaves_differently"]
    assert "IndexError" in result.message  # the user sees the evidence (the second judge's, or the context judge's)
    assert server.remaining == 2 and result.agent.rounds == 2, "no further attempt"


def test_a_rejected_diff_is_not_retried_past_the_attempts_and_never_leaks(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    wrong = ("edit_file", {"path": "shop/pagination.py", "old_text": BUG, "new_text": "min(end, len(items) + 2)"})
    again = ("edit_file", {"path": "shop/pagination.py", "old_text": "len(items) + 2", "new_text": "len(items) + 3"})
    steps = [reply(None, [wrong]), reply("done"), reply(None, [again]), reply("done again")]
    result, server = run(repo, pytest_traceback, steps, sandbox_image, tmp_path, attempts=2)
    assert (result.status, result.reason, result.diff) == ("not_verified", "tests_failed", None)
    assert [a["reason"] for a in result.attempts] == ["tests_failed", "tests_failed"]
    assert server.remaining == 0 and result.agent.rounds == 4
    assert "len(items) + 3" not in json.dumps(result.as_json())


def test_giving_up_ends_the_run_honestly_with_the_reason(
        repo: Path, pytest_traceback: str, sandbox_image: str, tmp_path: Path) -> None:
    why = "the test expects page 3 to hold 6 items, which contradicts the other tests"
    result, server = run(repo, pytest_traceback, [reply(None, [FIX, ("give_up", {"reason": why})])], sandbox_image,
                         tmp_path)
    assert (result.status, result.reason, result.exit_code, result.diff) == ("not_verified", "gave_up", 1, None)
    assert why in result.message and result.agent.stop == "gave_up" and len(server.chat_requests) == 1
    system = server.chat_requests[0]["messages"][0]["content"]
    assert "give_up" in system and "detected" in system and "acceptable answer" in system
    tools = [t["function"]["name"] for t in server.chat_requests[0]["tools"]]
    assert tools[-1] == "give_up"
    ends = [e for e in events(result) if e["type"] == "run_end"]
    assert ends[-1]["reason"] == "gave_up"
