"""A slow model is not a dead model: a job whose model streams each reply token by token, each reply taking
longer than a deadline on the whole request would allow, ends verified (real Docker, real HTTP).

The deadlines are scaled down so the test runs in seconds: the idle deadline is 2 s and each reply takes
about 6 s, a chunk every 0.25 s, as a local model on a CPU answers (whose replies outlasted the old 60 s
whole-request deadline and were asked four more times while the server was still generating the first).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.pipeline import JobSpec, run_job
from patcher.testing import ScriptedModelServer, reply
from tests.support.example import FILES, FIX
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

IDLE_S, TOKEN_S = 2.0, 0.25


def test_a_model_slower_than_a_whole_request_deadline_still_gets_the_job_verified(
        sandbox_image: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop", FILES)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=repo,
                         capture_output=True, text=True)
    steps = [reply("Clamping the end of the page.", [FIX], token_delay_s=TOKEN_S),
             reply("The last page no longer reads past the end of the list.", token_delay_s=TOKEN_S)]
    with ScriptedModelServer(steps) as server:
        model = server.model_config(idle_timeout_s=IDLE_S, reply_timeout_s=60, max_retries=3)
        spec = JobSpec(repo=str(repo), traceback=out.stdout, model=model, engine="agent",
                       sandbox=SandboxConfig(image=sandbox_image, test_timeout_s=60), trace_dir=tmp_path / "runs",
                       attempts=1, review=False)  # the reviewer's request is another test's
        result = run_job(spec)
        asked = len(server.chat_requests)
    assert (result.status, result.reason) == ("verified", "verified"), result.message
    events = [json.loads(line) for line in Path(result.trace or "").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "model_call"]
    assert len(calls) == asked == 2  # each reply asked for once
    assert calls[0]["duration_ms"] > 2.5 * IDLE_S * 1000  # far longer than the deadline between chunks
    streamed = [e for e in events if e["type"] == "model_stream"]
    assert streamed and all(e["chunks"] > 0 and e["seconds"] > 0 for e in streamed)
    assert any("edit_file" in e["tool_calls"] for e in streamed)  # the live page saw the edit being written
