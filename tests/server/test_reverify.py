"""The API on a par with the CLI, and re-verification when the base moves, against a real `patcher serve`
(real SQLite, real Docker, the scripted model over real HTTP): every job setting is a field of
POST /v1/jobs by the CLI's names; a verified diff is proved again on a moved base (a new signed record
of the same digest, which the gate then takes, with the approval carried over and saying so), refused
honestly when it no longer applies; and an approval is carried only for the same digest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patcher.pipeline import JobSpec
from patcher.request import JobRequest, job_spec
from patcher.review import run_gate, statement_of
from patcher.review.attestation import check
from patcher.server.reverify import carried_approval, reverify_spec
from patcher.server.store import Store
from patcher.testing import ScriptedModelServer
from tests.support.api import ALICE, BOB, ROOT, ApiServer, fixer, job_body, read_sse
from tests.support.example import FILES
from tests.support.helpers import git, make_repo

PARITY = {"repo", "ref", "traceback", "test_command", "suite_command", "engine", "setup", "python", "attempts",
          "limits", "offline_limit", "offline_budget_s"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with ScriptedModelServer([fixer] * 200) as model:
        srv = ApiServer(tmp_path_factory.mktemp("reverify"), model.base_url, PATCHER_MAX_TIMEOUT_S="1000").start()
        try:
            yield srv
        finally:
            srv.stop()


def verified_job(srv: ApiServer, name: str, approve: bool = True) -> tuple[str, dict[str, Any], Path]:
    """A verified job on its own repository (alice submits, bob approves)."""
    repo = make_repo(srv.repos / name, FILES)
    with srv.client() as c:
        r = c.post("/v1/jobs", json=job_body(repo, engine="agent"))
    assert r.status_code == 202, r.text
    result = srv.wait(r.json()["id"])
    assert result["status"] == "verified", result["message"]
    if approve:
        with srv.client(BOB) as c:
            assert c.post(f"/v1/jobs/{r.json()['id']}/review", json={"decision": "approve", "comment": "ok"}).is_success
    return r.json()["id"], result, repo


def commit(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_every_job_setting_of_the_cli_is_a_field_of_the_api_with_an_example(server: ApiServer) -> None:
    assert set(JobRequest.model_fields) == PARITY
    assert set(JobSpec.model_fields) >= PARITY, "the API's names are the job's names"
    with server.client() as c:
        schema = c.get("/openapi.json").json()
    request = schema["components"]["schemas"]["JobRequest"]
    assert set(request["properties"]) >= PARITY and request["examples"][0]["engine"] == "auto"
    assert "offline engine" in request["properties"]["offline_limit"]["description"]
    assert schema["components"]["schemas"]["ReverifyRequest"]["examples"] == [{"ref": "main"}]
    spec = job_spec(JobRequest(repo="/r", traceback="tb", engine="offline", setup="pip install -e .",
                               offline_limit=7, offline_budget_s=9.5), trace_dir=Path("/t"))
    assert (spec.engine, spec.setup, spec.offline_limit, spec.offline_budget_s) == ("offline", "pip install -e .",
                                                                                    7, 9.5)
    with server.client() as c:
        body = job_body(server.repo(), offline_budget_s=1001)
        r = c.post("/v1/jobs", json=body)
        assert r.status_code == 400 and "offline_budget_s 1001.0 > 1000.0" in r.json()["detail"]
        assert c.post("/v1/jobs", json=job_body(server.repo(), engine="gpt")).status_code == 422


@pytest.mark.docker
def test_the_engine_and_its_limits_are_the_clients_choice(server: ApiServer, sandbox_image: str) -> None:
    asked = {"engine": "offline", "attempts": 2, "offline_limit": 3, "offline_budget_s": 30,
             "limits": {"max_rounds": 5, "timeout_s": 60}}
    with server.client() as c:
        job_id = c.post("/v1/jobs", json=job_body(server.repo("offline"), **asked)).json()["id"]
        result = server.wait(job_id)
        start = next(m for m in read_sse(c, f"/v1/jobs/{job_id}/events") if m["event"] == "run_start")
    assert result["agent"]["engine"] == "offline" and result["agent"]["rounds"] == 0
    assert result["agent"]["search"]["check_limit"] == 3 and result["agent"]["search"]["time_budget_s"] == 30
    run_start = json.loads(start["data"])
    assert (run_start["engine"], run_start["attempts"], run_start["limits"]["max_rounds"]) == ("offline", 2, 5)


@pytest.mark.docker
def test_a_verified_diff_is_proved_again_on_a_moved_base_and_the_gate_takes_the_new_record(
        server: ApiServer, sandbox_image: str) -> None:
    job_id, result, repo = verified_job(server, "moving")
    with server.client() as c:
        old_record = c.get(f"/v1/jobs/{job_id}/attestation").content
    moved = commit(repo, "docs/CHANGES.md", "# changes\n\nunrelated work on main\n", "main moves on")
    patch = repo.parent / "moving.diff"
    patch.write_text(result["diff"])
    (repo.parent / "old.json").write_bytes(old_record)
    code, line = run_gate(patch, repo.parent / "old.json", server.public_key, True, repo=repo)
    assert code == 1 and "refused: base:" in line, line

    with server.client(BOB) as c:
        r = c.post(f"/v1/jobs/{job_id}/reverify", json={"ref": "main"})
        assert r.status_code == 202 and r.json()["of"] == job_id, r.text
        again = server.wait(r.json()["id"])
        assert (again["status"], again["diff_sha256"], again["base_commit"]) == ("verified", result["diff_sha256"],
                                                                                 moved), again["message"]
        assert again["reverified"] == {"of": job_id, "ref": "main", "diff_sha256": result["diff_sha256"]}
        assert again["agent"]["rounds"] == 0 and again["verification"]["reproduction"]["after"] == "passed"
        envelope = c.get(f"/v1/jobs/{r.json()['id']}/attestation").json()
    ok, why = check(result["diff"].encode(), envelope, server.public_key.read_bytes(), require_approval=True)
    assert ok and f"on job {job_id}" in why, why
    ext = statement_of(envelope)["predicate"]["patcher"]
    assert ext["approval"]["who"] == "bob" and ext["approval"]["carried_from"] == job_id
    assert ext["submitter"] == "alice", "the change's submitter, not who asked for the re-verification"
    (repo.parent / "new.json").write_text(json.dumps(envelope))
    code, line = run_gate(patch, repo.parent / "new.json", server.public_key, True, repo=repo)
    assert code == 0 and "approved by bob" in line, line

    with server.client(ALICE) as c:  # the submitter still cannot approve their change on the new job
        r2 = c.post(f"/v1/jobs/{r.json()['id']}/review", json={"decision": "approve"})
        assert r2.status_code == 403, r2.text


@pytest.mark.docker
def test_a_diff_that_no_longer_applies_is_refused_honestly(server: ApiServer, sandbox_image: str) -> None:
    job_id, _, repo = verified_job(server, "rewritten", approve=False)
    pagination = (repo / "shop/pagination.py").read_text().replace("len(items) + 1", "len(items) + 1 + 0")
    commit(repo, "shop/pagination.py", pagination, "someone rewrote the line")
    with server.client() as c:
        again_id = c.post(f"/v1/jobs/{job_id}/reverify", json={"ref": "main"}).json()["id"]
        again = server.wait(again_id)
        assert (again["status"], again["reason"], again["diff"]) == ("error", "bad_input", None)
        assert "does not apply" in again["message"]
        assert c.get(f"/v1/jobs/{again_id}/attestation").status_code == 404
        assert c.post(f"/v1/jobs/{again_id}/reverify", json={"ref": "main"}).status_code == 409
        assert c.post(f"/v1/jobs/{job_id}/reverify", json={"ref": "-x"}).status_code == 422


@pytest.mark.docker
def test_the_ci_example_gates_again_after_asking_for_re_verification_on_the_moved_base(
        server: ApiServer, sandbox_image: str) -> None:
    job_id, result, repo = verified_job(server, "ci")
    git(repo, "checkout", "-q", "-b", f"patcher/{job_id}")
    (repo / "fix.diff").write_text(result["diff"])
    git(repo, "apply", "fix.diff")
    (repo / "fix.diff").unlink()
    git(repo, "commit", "-q", "-am", "patcher's fix")
    git(repo, "checkout", "-q", "main")
    commit(repo, "docs/CHANGES.md", "main moved on\n", "main moves on")
    git(repo, "rebase", "-q", "main", f"patcher/{job_id}")  # "update branch": the PR is onto the new main
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(repo.parent),
           "PATCHER_URL": server.url, "PATCHER_TOKEN": BOB, "PATCHER_PUBLIC_KEY_FILE": str(server.public_key),
           "PATCHER_POLL_S": "1", "PATCHER_GATE_DIR": str(repo.parent)}
    run = subprocess.run(["bash", str(ROOT / "examples/ci/patcher-gate.sh"), job_id, "main", f"patcher/{job_id}"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    lines = run.stdout.splitlines()
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "gate: refused: base:" in lines[0] and "asking patcher to verify" in lines[1], lines
    assert ": verified (verified)" in lines[2] and lines[3].startswith("gate: ok:") and job_id in lines[3], lines


@pytest.mark.docker
def test_patcher_verify_writes_a_signed_record_on_the_moved_base(server: ApiServer, sandbox_image: str) -> None:
    _, result, repo = verified_job(server, "cli", approve=False)
    commit(repo, "docs/CHANGES.md", "main moved on\n", "main moves on")
    patch, record = repo.parent / "cli.diff", repo.parent / "cli-record.json"
    patch.write_text(result["diff"])
    patcher = [str(Path(sys.executable).parent / "patcher"), "verify", str(repo), "--ref", "main", "--patch",
               str(patch), "--test", "python -m pytest -q tests/test_pagination.py", "--record", str(record)]
    env = {k: v for k, v in os.environ.items() if k != "PATCHER_SIGNING_KEY"}
    keyless = subprocess.run(patcher, env=env, capture_output=True, text=True, timeout=60)
    assert keyless.returncode == 2 and "--record needs a signing key" in keyless.stderr and not record.exists()
    signed = subprocess.run(patcher, env=env | {"PATCHER_SIGNING_KEY": str(server.home / "signer.pem")},
                            capture_output=True, text=True, timeout=600)
    assert signed.returncode == 0 and signed.stdout == result["diff"], signed.stderr
    code, line = run_gate(patch, record, server.public_key, repo=repo)
    assert code == 0 and "verified on " + git(repo, "rev-parse", "HEAD") in line, line
    assert run_gate(patch, record, server.public_key, True, repo=repo)[0] == 1, "no approval in a CLI record"


def test_an_approval_is_carried_only_for_the_same_digest(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'jobs.db'}")
    try:
        original = _done(store, {"repo": "/r", "traceback": "tb"}, {"diff": "d1", "diff_sha256": "a" * 64},
                         submitter="alice")
        store.add_review(original.id, "approve", "bob", "looks right")
        same = _done(store, reverify_spec(original, "main"), {"diff": "d1", "diff_sha256": "a" * 64}, submitter="carol")
        approval = carried_approval(store, same)
        assert approval is not None and (approval.who, approval.carried_from) == ("bob", original.id)
        chained = _done(store, reverify_spec(same, "next"), {"diff": "d1", "diff_sha256": "a" * 64})
        assert (carried := carried_approval(store, chained)) is not None and carried.carried_from == original.id
        other = _done(store, reverify_spec(original, "main"), {"diff": "d2", "diff_sha256": "b" * 64})
        assert carried_approval(store, other) is None, "another digest never takes the approval"
        named = {**reverify_spec(original, "main"), "diff_sha256": "b" * 64}
        forged = _done(store, named, {"diff": "d2", "diff_sha256": "b" * 64})
        assert carried_approval(store, forged) is None, "nor does a spec that names another digest"
    finally:
        store.close()


def _done(store: Store, spec: dict[str, Any], result: dict[str, Any], submitter: str | None = None) -> Any:
    job, _ = store.submit(spec, submitter=submitter)
    claimed = store.claim()
    assert claimed is not None and claimed.id == job.id and claimed.token
    store.finish(job.id, claimed.token, {"status": "verified", **result})
    found = store.get(job.id)
    assert found is not None
    return found
