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
