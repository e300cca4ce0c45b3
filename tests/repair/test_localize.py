"""Fault localization: the coverage harness (sandbox/linecov.py) run for real, Ochiai on its output, and
an assertion-only failure whose faulty line no traceback frame names, fixed offline on real Docker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import parse_traceback
from patcher.pipeline import JobSpec, run_job
from patcher.repair import candidates
from patcher.repair.localize import HARNESS, coverage_command, ochiai, rank_of
from tests.support.helpers import make_repo
from tests.support.offline import example_repo, failing_traceback

ROOT = Path(__file__).resolve().parents[2]
CART = {
    "shop/__init__.py": "",
    "shop/cart.py": ("def _line_total(price, qty):\n"
                     "    return price * qty + 1\n\n\n"
                     "def total(items):\n"
                     "    return sum(_line_total(p, q) for p, q in items)\n\n\n"
                     "def count(items):\n"
                     "    return sum(q for _, q in items)\n"),
    "tests/test_cart.py": ("from shop.cart import count, total\n\n\n"
                           "def test_total():\n    assert total([(2, 3), (1, 1)]) == 7\n"
                           "    assert total([(5, 2)]) == 10\n\n\n"
                           "def test_count():\n    assert count([(2, 3), (1, 1)]) == 4\n"),
}


def spectra(repo: Path) -> list[dict[str, object]]:
    """The harness as the box runs it, here with this interpreter (its path swapped for the checkout's)."""
    out = repo.parent / "cov.json"
    argv = ["python", "-c", f'exec(open("{ROOT / "sandbox/linecov.py"}").read())', str(out), "--", "-q",
            "-p", "no:cacheprovider"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, *argv[1:]], cwd=repo, capture_output=True, text=True, env=env)
    assert run.returncode == 1, run.stdout + run.stderr  # the failing test fails under the harness too
    return list(json.loads(out.read_text())["tests"])


def test_the_harness_records_each_tests_lines_and_outcome(tmp_path: Path) -> None:
    tests = spectra(example_repo("swap_operands", tmp_path))
    by_id = {t["id"]: t for t in tests}
    fresh = by_id["tests/test_signer.py::test_fresh_signature_is_accepted"]
    future = by_id["tests/test_signer.py::test_signature_from_the_future_is_refused"]
    assert fresh["outcome"] == "failed" and future["outcome"] == "passed"
    assert fresh["lines"]["tokens/signer.py"] == [8, 10, 11, 12]  # type: ignore[index]
    assert 13 in future["lines"]["tokens/signer.py"]  # type: ignore[index]


def test_ochiai_ranks_the_line_only_the_failing_test_runs_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "cart", CART)
    suspects = ochiai(spectra(repo), set())
    assert (suspects[0].path, suspects[0].score) == ("shop/cart.py", 1.0)
    assert rank_of(suspects, "shop/cart.py", 2) is not None and rank_of(suspects, "shop/cart.py", 2) <= 4
    assert rank_of(suspects, "shop/cart.py", 10) is None  # run by the passing test only
    assert all(not s.path.startswith("tests/") for s in suspects)


def test_ochiai_formula_and_which_failures_count() -> None:
    tests = [{"id": "a", "outcome": "failed", "lines": {"m.py": [1, 2]}},
             {"id": "b", "outcome": "passed", "lines": {"m.py": [1]}},
             {"id": "c", "outcome": "failed", "lines": {"m.py": [3]}},
             {"id": "d", "outcome": "skipped", "lines": {"m.py": [2]}}]
    assert [(s.line, round(s.score, 3)) for s in ochiai(tests, {"a"})] == [(2, 1.0), (1, 0.707)]
    assert [(s.line, round(s.score, 3)) for s in ochiai(tests, set())] == [(2, 0.707), (3, 0.707), (1, 0.5)]


def test_only_pytest_suites_are_wrapped() -> None:
    wrapped = coverage_command("python -m pytest -q tests", "/r/x.json")
    assert wrapped is not None and wrapped.startswith("python -c ") and HARNESS in wrapped
    assert wrapped.endswith("/r/x.json -- -q tests")
    assert coverage_command("python -m unittest", "/r/x.json") is None


def test_without_a_ranking_the_faulty_helper_is_never_a_site(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "cart", CART)
    found = list(candidates(parse_traceback(failing_traceback(repo)), repo))
    assert not any(c.line == 2 for c in found)  # the test calls total(), the bug is in _line_total()


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_an_assertion_only_failure_is_fixed_at_the_line_coverage_points_to(sandbox_image: str, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATCHER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    repo = make_repo(tmp_path / "cart", CART)
    result = run_job(JobSpec(repo=str(repo), traceback=failing_traceback(repo), trace_dir=tmp_path / "runs",
                             sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=60)))
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert "-    return price * qty + 1\n+    return price * qty\n" in (result.diff or "")
    search = result.agent.search or {}
    assert {"path": "shop/cart.py", "line": 2, "score": 1.0} in search["localized"]


def test_the_agent_is_told_the_top_lines_with_their_scores(tmp_path: Path) -> None:
    from patcher.agent import task_text
    from patcher.intake import StagedRepo
    from patcher.repair.localize import Suspect
    from patcher.sandbox import LocalSandbox
    from patcher.verify import Job

    repo = make_repo(tmp_path / "cart", CART)
    text = failing_traceback(repo)
    suspects = [Suspect("shop/cart.py", 2, 1.0), Suspect("shop/cart.py", 6, 0.707)]
    job = Job(StagedRepo(repo, "", None, False, []), LocalSandbox, "", "python -m pytest -q",
              parsed=parse_traceback(text), traceback=text)
    task = task_text(job, suspects)
    assert "## Lines the tests point to" in task
    assert "- shop/cart.py:2 (score 1.00): `return price * qty + 1`" in task
    assert "- shop/cart.py:6 (score 0.71): `return sum(_line_total(p, q) for p, q in items)`" in task
    assert "Lines the tests point to" not in task_text(job)


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_the_agent_gets_the_ranking_measured_in_a_box_of_its_own(sandbox_image: str, tmp_path: Path) -> None:
    from patcher.testing import ScriptedModelServer, reply

    repo = make_repo(tmp_path / "cart", CART)
    fix = ("edit_file", {"path": "shop/cart.py", "old_text": "price * qty + 1", "new_text": "price * qty"})
    with ScriptedModelServer([reply(None, [fix]), reply("done")]) as server:
        result = run_job(JobSpec(repo=str(repo), traceback=failing_traceback(repo), trace_dir=tmp_path / "runs",
                                 engine="agent", model=server.model_config(), review=False,
                                 sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=60)))
        task = json.dumps(server.chat_requests[0]["messages"])
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    assert "Lines the tests point to" in task and "shop/cart.py:2 (score 1.00)" in task
    assert result.files_changed == ["shop/cart.py"] and result.warnings == []


ENDS = {
    "seqs/__init__.py": "",
    "seqs/ends.py": ('def last(seq):\n    """The last element."""\n    return tail(1, seq)[0]\n\n\n'
                     'def tail(n, seq):\n    """The last n elements."""\n    return seq[-n + 1:]\n'),
    "tests/test_ends.py": ("from seqs.ends import last, tail\n\n\n"
                           "def test_last():\n    assert last('ABCDE') == 'E'\n\n\n"
                           "def test_tail():\n    assert tail(3, 'ABCDE') == 'CDE'\n"),
}
"""`tail()` is wrong; `last()` only reads its answer. `tail(1, seq)[-1]` would pass `test_last` alone."""


def test_lines_that_tie_for_the_reproduction_go_to_the_one_more_failing_tests_run() -> None:
    tests = [{"id": "repro", "outcome": "failed", "lines": {"m.py": [2, 9]}},
             {"id": "other", "outcome": "failed", "lines": {"m.py": [9]}},
             {"id": "ok", "outcome": "passed", "lines": {"m.py": [1]}}]
    assert [(s.line, s.score) for s in ochiai(tests, {"repro"})] == [(9, 1.0), (2, 1.0)]


def test_the_callee_more_failing_tests_run_is_tried_before_its_caller(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ends", ENDS)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ends.py::test_last"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=env)
    suspects = ochiai(spectra(repo), {"tests/test_ends.py::test_last"})
    assert [(s.line, s.score) for s in suspects[:2]] == [(6, 1.0), (8, 1.0)]  # tail's, then last's (1, 3)
    first = next(candidates(parse_traceback(run.stdout), repo, suspects=suspects))
    assert (first.line, first.description) == (8, "`-n + 1` → `-n`")


def test_the_line_that_raised_ranks_with_the_top_lines_ahead_of_its_ties(tmp_path: Path) -> None:
    """Coverage favours what only the failing test runs (api.py, its caller); the traceback says where it
    broke (pagination.py:12). Candidates on the raising line come first."""
    from patcher.repair.localize import Suspect

    repo = tmp_path / "shop"
    subprocess.run(["cp", "-r", str(ROOT / "examples/shop"), str(repo)], check=True)
    parsed = parse_traceback((ROOT / "examples/shop.traceback.txt").read_text())
    suspects = [Suspect("shop/api.py", 8, 1.0), Suspect("shop/api.py", 9, 1.0), Suspect("shop/pagination.py", 12, 0.7)]
    first = next(iter(candidates(parsed, repo, 50, suspects=suspects)))
    assert (first.path, first.line) == ("shop/pagination.py", 12)
    ranked = [(c.path, c.line) for c in candidates(parsed, repo, 50, suspects=suspects)]
    assert ranked.index(("shop/pagination.py", 12)) < ranked.index(("shop/api.py", 9))
