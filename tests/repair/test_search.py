"""The offline engine end to end on real Docker, no model: each bundled template example ends `verified`,
and a bug no template fixes ends `not_verified` with the number of candidates tried."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from patcher.agent import reproduction_command
from patcher.config import DEFAULT_SUITE, SandboxConfig
from patcher.intake import map_frames, parse_traceback, stage_repo
from patcher.pipeline import JobSpec, run_job
from patcher.repair import search_templates
from patcher.sandbox import LocalSandbox
from patcher.testing import ScriptedModelServer, delay, reply
from patcher.trace import read_events
from patcher.verify import Job, run_baseline
from tests.support.helpers import git

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples/offline"
TEMPLATES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "traceback.txt").exists() and p.name != "no_template")
BY = {"empty_conversion": "empty_guard", "swap_later": "swap_args", "guard_flip": "comparison"}
"""Examples named for the bug rather than for the template that fixes it."""


def example(name: str, tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / name
    shutil.copytree(EXAMPLES / name, repo, ignore=shutil.ignore_patterns("traceback.txt", "__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    return repo, (EXAMPLES / name / "traceback.txt").read_text()


def spec(repo: Path, traceback: str, image: str, tmp_path: Path, **kw: object) -> JobSpec:
    return JobSpec(repo=str(repo), traceback=traceback, sandbox=SandboxConfig(image=image, test_timeout_s=60),
                   trace_dir=tmp_path / "runs", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", TEMPLATES)
def test_each_template_example_is_verified_without_a_model(
        name: str, sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATCHER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    repo, traceback = example(name, tmp_path)
    result = run_job(spec(repo, traceback, sandbox_image, tmp_path))
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert result.agent.engine == "offline" and result.agent.candidates_tried >= 1
    assert result.agent.tokens == {"input": 0, "output": 0}
    assert f"({BY.get(name, name)} at " in result.message
    search = result.agent.search or {}
    assert (search["checks"], search["stopped"], search["check_limit"]) == (result.agent.candidates_tried, "found", 200)
    assert 1 <= search["suite_runs"] <= search["checks"] and search["seconds"] <= search["time_budget_s"] == 120.0
    (tmp_path / "fix.diff").write_text(result.diff or "")
    git(repo, "apply", str(tmp_path / "fix.diff"))
    after = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                           cwd=repo, capture_output=True, text=True,
                           env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert after.returncode == 0, after.stdout


def test_a_bug_no_template_fixes_is_not_verified_with_the_count(sandbox_image: str, tmp_path: Path) -> None:
    repo, traceback = example("no_template", tmp_path)
    result = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="offline"))
    assert (result.status, result.reason, result.diff) == ("not_verified", "no_change", None)
    assert result.agent.candidates_tried >= 1
    assert f"{result.agent.candidates_tried} candidate(s) tried" in result.message


def test_the_search_is_bounded_by_checks_and_by_time_and_says_which(sandbox_image: str, tmp_path: Path) -> None:
    repo, traceback = example("no_template", tmp_path)
    by_count = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="offline", offline_limit=3))
    assert by_count.agent.search is not None
    assert {k: by_count.agent.search[k] for k in ("checks", "check_limit", "stopped")} == {
        "checks": 3, "check_limit": 3, "stopped": "candidate_limit"}
    assert by_count.agent.search["generated"] == 3
    by_time = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="offline", offline_budget_s=0.001))
    assert by_time.agent.search is not None and by_time.agent.search["stopped"] == "time_budget"
    assert by_time.agent.search["checks"] <= 1 and by_time.agent.search["time_budget_s"] == 0.001
    assert "the time budget ran out" in by_time.message


def test_auto_starts_the_agent_at_once_and_stops_the_templates_when_it_verifies(
        sandbox_image: str, tmp_path: Path) -> None:
    repo, traceback = example("no_template", tmp_path)
    fix = ("edit_file", {"path": "timeparse/duration.py", "old_text": "total += int(number) * UNITS[ch]",
                         "new_text": "total += int(number) * UNITS[ch]\n            number = \"\""})
    with ScriptedModelServer([reply(None, [fix]), reply("done")]) as server:
        result = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="auto", model=server.model_config()))
    assert (result.status, result.reason, result.engine) == ("verified", "verified", "agent"), result.message
    assert result.agent.engine == "auto" and result.engines["agent"]["rounds"] == 2
    offline = result.engines["offline"]  # beside the agent: stopped by its verified diff, or ended on its own
    assert offline["stopped"] in ("agent_verified", "exhausted", "candidate_limit", "time_budget"), offline
    assert offline["seconds"] <= result.engines["agent"]["seconds"] + 5
    seq = {e["type"]: e["seq"] for e in reversed(list(read_events(Path(result.trace or ""))))}
    assert seq["model_call"] < seq.get("offline", seq["engines"])  # the model was asked before the templates ended


def test_auto_takes_the_templates_fix_and_stops_an_agent_still_at_work(sandbox_image: str, tmp_path: Path) -> None:
    repo, traceback = example("off_by_one", tmp_path)
    with ScriptedModelServer([delay(600, reply("never heard"))]) as server:  # a model that answers after the job
        started = time.monotonic()
        model = server.model_config(idle_timeout_s=600, max_retries=0)
        result = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="auto", model=model))
    assert (result.status, result.reason, result.engine) == ("verified", "verified", "offline"), result.message
    assert result.engines["agent"]["stopped"] == "offline_verified" and result.engines["agent"]["rounds"] is None
    assert result.engines["offline"]["stopped"] == "found" and result.engines["offline"]["checks"] >= 1
    assert time.monotonic() - started < 400  # the agent's model call was abandoned, not waited for


def test_without_a_model_the_offline_engine_reports_its_spend_alone(
        sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATCHER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    repo, traceback = example("no_template", tmp_path)
    result = run_job(spec(repo, traceback, sandbox_image, tmp_path, offline_limit=2))
    assert (result.reason, result.engine, list(result.engines)) == ("no_change", None, ["offline"])
    assert result.engines["offline"]["checks"] == 2 and result.engines["offline"]["stopped"] == "candidate_limit"


def test_offline_needs_a_reproduction(sandbox_image: str, tmp_path: Path) -> None:
    repo, _ = example("off_by_one", tmp_path)
    plain = ('Traceback (most recent call last):\n  File "/srv/app/seq/pairs.py", line 6, in pairs\n'
             "IndexError: list index out of range\n")
    result = run_job(spec(repo, plain, sandbox_image, tmp_path, engine="offline"))
    assert result.reason == "not_reproduced" and "--test" in result.message


def test_a_survivor_that_leaves_base_failures_failing_gives_way_to_one_that_fixes_them(
        sandbox_image: str, tmp_path: Path) -> None:
    from tests.support.helpers import make_repo
    from tests.support.offline import EVERY, pytest_run

    repo = make_repo(tmp_path / "every", EVERY)
    test = "tests/test_every.py::test_one"
    result = run_job(spec(repo, pytest_run(repo, test).stdout, sandbox_image, tmp_path, engine="offline",
                          test_command=f"python -m pytest -q {test}"))
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    # `elif n != 1:` came first and passes test_one, but n == 2 then takes the wrong path and test_n fails
    assert "-        return items[1::1]\n+        return items[0::1]\n" in (result.diff or ""), result.diff
    search = result.agent.search or {}
    assert search["still_failing"] == [] and search["suite_runs"] >= 2 and search["stopped"] == "found"


def test_auto_sizes_its_share_of_checks_from_the_measured_time_of_one(tmp_path: Path) -> None:
    repo, traceback = example("no_template", tmp_path)
    staged = stage_repo(str(repo))
    parsed = map_frames(parse_traceback(traceback), staged.files)
    job = Job(staged, LocalSandbox, DEFAULT_SUITE, reproduction_command(parsed, None, staged.files), "AssertionError",
              parsed=parsed, traceback=traceback)
    job = job.with_baseline(run_baseline(job))
    with LocalSandbox(staged) as box:
        wide = search_templates(job, box, limit=12)
        tight = search_templates(job, box, limit=12, share_s=0.001)  # no check fits: the floor
    staged.cleanup()
    assert (wide.search()["check_limit"], wide.stopped) == (12, "candidate_limit") and wide.tried == 12
    assert (tight.search()["check_limit"], tight.tried, tight.stopped) == (5, 5, "candidate_limit")


def test_candidates_that_pass_the_reproduction_and_fail_the_suite_are_listed_as_near_misses(
        sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test beside the reproduction wants the empty mean to raise: every guard that makes `average([])` None
    fails it, so none passes, and the result says which ones came near, which test they failed and why."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATCHER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    repo, traceback = example("empty_guard", tmp_path)
    tests = repo / "tests/test_mean.py"
    tests.write_text("import pytest\n" + tests.read_text() + "\n\ndef test_no_values_is_an_error():\n"
                     "    with pytest.raises(ZeroDivisionError):\n        average([])\n")
    git(repo, "commit", "-q", "-am", "a test that wants the error")
    result = run_job(spec(repo, traceback, sandbox_image, tmp_path, engine="offline"))
    assert result.status == "not_verified", result.message
    near = (result.agent.search or {})["near_misses"]
    assert near, result.agent.search
    first = near[0]
    assert first["path"] == "metrics/mean.py" and first["broke"] == ["tests/test_mean.py::test_no_values_is_an_error"]
    assert "DID NOT RAISE" in first["first_failure"], first
    assert f"{len(near)} made the reproduction pass and then failed the suite (the first, " in result.message
    assert "diff" not in first and result.diff is None  # a near miss is not verified: its diff never leaves
