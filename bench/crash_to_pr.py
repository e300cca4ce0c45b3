"""From a production crash to an opened pull request, on the bundled example (examples/shop): one run.

Starts the whole arrangement of tests/support/world.py (a real `patcher serve` with one worker, SQLite, real
Docker; the shop's remote on git's smart HTTP behind a token; the scripted forge through PyGithub; webhook
receivers), lets the application crash and report it with the real sentry-sdk, and prints, on the server's
clock, the time from the event's arrival (the crash's first_seen) to the job's verdict and to the opened pull
request (the delivery's last update).

    PATCHER_SANDBOX_IMAGE=… .venv/bin/python -m bench.crash_to_pr
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

from tests.support.helpers import git
from tests.support.world import until, world


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="crash-to-pr-") as home, world(Path(home), workers=1, hook_failures=0) as w:
        release = git(w.work, "rev-parse", "HEAD")
        w.crash(release)
        job_id = w.job_of(release)
        result = w.server.wait(job_id, timeout=900)
        delivery = until(lambda: (d := w.delivery(job_id)["delivery"]) and d["state"] in ("done", "failed") and d,
                         timeout=300)
        with w.server.client() as c:
            [job] = [j for j in c.get("/v1/jobs").json()["jobs"] if j["id"] == job_id]
        arrived = datetime.fromisoformat(job["crash"]["first_seen"])
        verdict = datetime.fromisoformat(job["updated_at"])
        opened = datetime.fromisoformat(delivery["updated_at"])
        print(f"job {job_id}: {result['status']} ({result['reason']}); delivery {delivery['state']}: "
              f"{delivery['pull_request'] or delivery['error']}")
        print(f"event arrived -> verdict:       {(verdict - arrived).total_seconds():6.1f} s")
        print(f"verdict -> pull request opened: {(opened - verdict).total_seconds():6.1f} s")
        print(f"event arrived -> pull request:  {(opened - arrived).total_seconds():6.1f} s")


if __name__ == "__main__":
    main()
