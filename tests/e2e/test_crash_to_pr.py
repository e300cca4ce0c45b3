"""From a production crash to a pull request, every part real: the application (examples/shop) crashes and
reports it with the real sentry-sdk to a running `patcher serve` with one worker; the job is verified by the
offline engine in Docker; its branch is pushed to the shop's remote over git's smart HTTP with the service's
token; the pull request is opened on the scripted forge through PyGithub; every webhook verifies with the
`standardwebhooks` library; and the CI example's gate (examples/ci/patcher-gate.sh) accepts the branch
patcher made once a reviewer approved it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.api import BOB
from tests.support.helpers import git
from tests.support.world import until, world

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docker
def test_a_production_crash_becomes_a_verified_pull_request_the_gate_accepts(tmp_path: Path,
                                                                              sandbox_image: str) -> None:
    with world(tmp_path, workers=1) as w:
        release = git(w.work, "rev-parse", "HEAD")
        started = time.monotonic()
        w.crash(release)
        job_id = w.job_of(release)
        w.crash(release)  # the same crash again, while the job runs: counted on it
        result = w.server.wait(job_id, timeout=600)
        assert (result["status"], result["reason"]) == ("verified", "verified"), result["message"]
        assert "+    return [items[i] for i in range(start, min(end, len(items)))]" in result["diff"]
        done = until(lambda: (d := w.delivery(job_id))["delivery"] and d["delivery"]["state"] != "pending"
                     and d["delivery"]["state"] != "running" and d, timeout=180)
        print(f"event to pull request: {time.monotonic() - started:.1f} s")
        assert done["delivery"]["state"] == "done", done["delivery"]
        assert w.remote.pushes == 1 and len(w.forge.pulls) == 1
        assert w.forge.pulls[0]["head"] == f"patcher/{job_id}" and "test_last_page" in w.forge.pulls[0]["body"]
        with w.server.client() as c:
            [listed] = [j for j in c.get("/v1/jobs").json()["jobs"] if j["id"] == job_id]
        assert listed["crash"]["count"] == 2 and listed["crash"]["release"] == release

        hooks = until(lambda: "job.delivered" in w.hooks.types() and w.hooks.got)
        assert all(h["verified"] for h in hooks)
        assert {"job.submitted", "job.verified", "job.delivered"} <= set(w.hooks.types())

        with w.server.client(BOB) as c:
            assert c.post(f"/v1/jobs/{job_id}/review", json={"decision": "approve"}).status_code == 200
        clone = tmp_path / "ci"
        subprocess.run(["git", "clone", "-q", str(w.bare), str(clone)], check=True)
        git(clone, "fetch", "-q", "origin", f"patcher/{job_id}:patcher/{job_id}")
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
               "PATCHER_URL": w.server.url, "PATCHER_TOKEN": BOB, "PATCHER_PUBLIC_KEY_FILE": str(w.server.public_key),
               "PATCHER_GATE_DIR": str(tmp_path)}
        gate = subprocess.run(["bash", str(ROOT / "examples/ci/patcher-gate.sh"), job_id, "main", f"patcher/{job_id}"],
                              cwd=clone, env=env, capture_output=True, text=True, timeout=300)
        assert gate.returncode == 0 and gate.stdout.startswith("gate: ok:"), gate.stdout + gate.stderr
