"""The `patcher` command as users and merge gates call it: stdout, stderr, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from patcher.testing import ScriptedModelServer, reply
from tests.support.example import FILES, FIX, PRODUCTION_TB
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]
PATCHER = str(ROOT / ".venv/bin/patcher")
REPRO = "python -m pytest -q tests/test_pagination.py"


def patcher(*args: str, env: dict[str, str] | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PATCHER, *args], capture_output=True, text=True, input=stdin, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {"PATCHER_HOME": str(tmp_path / "home")}


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_fix_prints_only_the_verified_diff_and_verify_gates_it(tmp_path: Path, home: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "shop", FILES)
    with ScriptedModelServer([reply(None, [FIX]), reply("done")]) as server:
        env = {**home, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-cli-test",
               "PATCHER_MODEL": server.model}
        out = patcher("fix", str(repo), "--traceback", "-", "--test", REPRO, env=env, stdin=PRODUCTION_TB)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("diff --git a/shop/pagination.py b/shop/pagination.py\n")
    assert "verified (verified)" in out.stderr
    (tmp_path / "fix.diff").write_text(out.stdout)
    gate = patcher("verify", str(repo), "--patch", str(tmp_path / "fix.diff"), "--test", REPRO, "--json", env=home)
    assert gate.returncode == 0, gate.stderr
    assert json.loads(gate.stdout)["diff"] == out.stdout
    (tmp_path / "junk.diff").write_text(out.stdout.replace("len(items)))]", "len(items) + 1))] "))
    refused = patcher("verify", str(repo), "--patch", str(tmp_path / "junk.diff"), "--test", REPRO, env=home)
    assert refused.returncode in (1, 2) and refused.stdout == ""


@pytest.mark.parametrize("args,needle", [
    (["fix", "/nonexistent/repo", "--traceback", "TB"], "/nonexistent/repo is neither an existing path nor a git URL"),
    (["fix", "NOTGIT", "--traceback", "TB"], "is not a git repository"),
    (["fix", "REPO", "--traceback", "/nonexistent/tb.txt"], "cannot read traceback /nonexistent/tb.txt"),
    (["fix", "REPO", "--traceback", "GARBAGE"], "traceback"),
    (["verify", "REPO", "--patch", "/nonexistent.diff"], "cannot read patch /nonexistent.diff"),
    (["verify", "REPO", "--patch", "EMPTY", "--test", REPRO], "the patch is empty"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, home: dict[str, str], args: list[str], needle: str) -> None:
    repo = make_repo(tmp_path / "shop", FILES)
    (tmp_path / "notgit").mkdir()
    (tmp_path / "tb.txt").write_text(PRODUCTION_TB)
    (tmp_path / "garbage.txt").write_text("everything is fine, nothing crashed\n")
    (tmp_path / "empty.diff").write_text("")
    where = {"REPO": str(repo), "NOTGIT": str(tmp_path / "notgit"), "TB": str(tmp_path / "tb.txt"),
             "GARBAGE": str(tmp_path / "garbage.txt"), "EMPTY": str(tmp_path / "empty.diff")}
    env = {**home, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x", "PATCHER_MODEL": "m"}
    out = patcher(*[where.get(a, a) for a in args], env=env)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stdout == ""
    first = out.stderr.strip().splitlines()[0]
    assert needle in first, out.stderr


def test_bad_input_with_json_is_one_json_result_with_its_trace(tmp_path: Path, home: dict[str, str]) -> None:
    out = patcher("verify", str(tmp_path), "--patch", "/nonexistent.diff", "--json", env=home)
    assert out.returncode == 2, out.stderr
    result = json.loads(out.stdout)
    assert (result["status"], result["reason"], result["diff"]) == ("error", "bad_input", None)
    assert "cannot read patch /nonexistent.diff" in result["message"]
    assert result["provenance"] is None and Path(result["trace"]).is_file()


def test_an_error_inside_patcher_is_one_line_naming_its_trace_never_a_traceback(tmp_path: Path,
                                                                                home: dict[str, str]) -> None:
    """A trace whose `tokens` is a number (an older or a hand-edited trace): its reader fails inside."""
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"run_id": "x", "seq": 1, "ts": 0, "type": "model_call", "round": 1, "tokens": 5})
                   + "\n")
    out = patcher("trace", str(odd), env=home)
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout, out.stderr
    line = out.stderr.strip()
    assert line.startswith("patcher: patcher failed inside (AttributeError: ") and "\n" not in line, line
    kept = Path(line.rsplit("the trace ", 1)[1].split(" holds", 1)[0])
    events = [json.loads(e) for e in kept.read_text().splitlines()]
    assert [e["type"] for e in events] == ["internal_error"]
    assert events[0]["error"] == "AttributeError" and "Traceback (most recent call last)" in events[0]["traceback"]


def test_no_docker_daemon_is_exit_3(tmp_path: Path, home: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "shop", FILES)
    (tmp_path / "tb.txt").write_text(PRODUCTION_TB)
    env = {**home, "DOCKER_HOST": f"unix://{tmp_path}/no-such.sock", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "OPENAI_API_KEY": "sk-x", "PATCHER_MODEL": "m"}
    out = patcher("fix", str(repo), "--traceback", str(tmp_path / "tb.txt"), "--test", REPRO, "--json", env=env)
    assert out.returncode == 3, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "error" and "no Docker daemon answers" in result["message"] and result["diff"] is None


@pytest.mark.docker
def test_a_missing_image_is_exit_3(tmp_path: Path, docker_client: object) -> None:
    from patcher.config import SandboxConfig
    from patcher.pipeline import JobSpec, run_job

    repo = make_repo(tmp_path / "shop", FILES)
    spec = JobSpec(repo=str(repo), traceback=PRODUCTION_TB, test_command=REPRO, trace_dir=tmp_path,
                   sandbox=SandboxConfig(image="patcher-no-such-image:none"))
    result = run_job(spec)
    assert (result.status, result.exit_code) == ("error", 3)
    assert "patcher image build" in result.message


def test_anything_raised_inside_a_job_is_an_internal_error_result_with_what_was_known(tmp_path: Path) -> None:
    """A caller of the library handing a wrong object where the sandbox settings go: the job fails inside."""
    from patcher.pipeline import verify_patch

    repo = make_repo(tmp_path / "shop", FILES)
    result = verify_patch(str(repo), "--- a/x\n+++ b/x\n", test_command=REPRO, trace_dir=tmp_path,
                          sandbox="not a config")  # type: ignore[arg-type]
    assert (result.status, result.reason, result.exit_code) == ("error", "internal_error", 1)
    assert result.message.startswith("patcher failed inside (AttributeError: ") and result.trace is not None
    assert result.provenance is not None and result.provenance["source_commit"] == result.base_commit
    events = [json.loads(e) for e in Path(result.trace).read_text().splitlines()]
    assert [e["type"] for e in events] == ["run_start", "internal_error", "run_end"]
    assert "Traceback (most recent call last)" in events[1]["traceback"]
