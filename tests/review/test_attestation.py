"""Signed verification records and the merge gate, with real keys, real files and the real CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from patcher.errors import BadInput
from patcher.result import JobResult
from patcher.review import Approval, AttestConfig, run_gate
from patcher.review import attestation as attest
from patcher.review.attestation import build_statement, check
from patcher.review.dsse import pae, sign_statement
from tests.support.helpers import git, make_repo

DIFF = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,4 @@
 def div(a, b):
+    if b == 0:
+        return None
     return a / b
"""
PATCHER = Path(sys.executable).with_name("patcher")


def verified_result(diff: str = DIFF) -> dict:
    return JobResult(
        run_id="20261201-000000-abcdef", status="verified", reason="verified", message="verified", diff=diff,
        base_commit="0123456789abcdef0123456789abcdef01234567", files_changed=["calc.py"],
        verification={"reproduction": {"command": "python -m pytest -q tests/test_calc.py::test_div",
                                       "before": "failed", "after": "passed"},
                      "fail_to_pass": ["tests/test_calc.py::test_div"],
                      "pass_to_pass": {"total": 12, "regressions": []}, "flaky": ["tests/test_io.py::test_slow"],
                      "duration_s": 4.2},
        trace="/tmp/run.jsonl", exit_code=0).as_json()


@pytest.fixture()
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "signing.pem", tmp_path / "signing.pub.pem"
    attest.generate_keypair(private, public)
    return private, public


def signed(private: Path, result: dict | None = None, **kw) -> dict:
    return attest.attest(result or verified_result(), AttestConfig(signing_key=private),
                         image="patcher-sandbox:latest", suite_command="python -m pytest -q", **kw)


def test_statement_follows_in_toto_and_dsse(keys: tuple[Path, Path]) -> None:
    private, public = keys
    envelope = signed(private)
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    body = base64.b64decode(envelope["payload"])
    statement = json.loads(body)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    digest = hashlib.sha256(DIFF.encode()).hexdigest()
    assert statement["subject"] == [{"name": "patch.diff", "digest": {"sha256": digest}}]
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    pred = statement["predicate"]
    assert pred["result"] == "PASSED"
    assert [c["name"] for c in pred["configuration"]] == ["reproduction", "suite"]
    assert pred["passedTests"] == ["tests/test_calc.py::test_div"]
    assert pred["failedTests"] == [] and pred["warnedTests"] == ["tests/test_io.py::test_slow"]
    ext = pred["patcher"]
    assert ext["base_commit"].startswith("0123") and ext["image"] == "patcher-sandbox:latest"
    assert ext["commands"]["suite"] == "python -m pytest -q" and ext["approval"] is None
    # the signature is Ed25519 over the DSSE pre-authentication encoding, checked independently here
    key = attest.load_public_key(public.read_bytes())
    key.verify(base64.b64decode(envelope["signatures"][0]["sig"]),
               b"DSSEv1 28 application/vnd.in-toto+json %d " % len(body) + body)
    assert envelope["signatures"][0]["keyid"] == attest.keyid_of(key)
    assert pae("t", b"ab") == b"DSSEv1 1 t 2 ab"


def test_round_trip(keys: tuple[Path, Path]) -> None:
    private, public = keys
    ok, reason = check(DIFF.encode(), signed(private), public.read_bytes())
    assert ok, reason
    assert reason.startswith("ok: patch sha256")


def test_tampered_patch_refused(keys: tuple[Path, Path]) -> None:
    private, public = keys
    ok, reason = check(DIFF.replace("None", "0").encode(), signed(private), public.read_bytes())
    assert not ok and reason.startswith("digest:")


def test_tampered_payload_refused(keys: tuple[Path, Path]) -> None:
    private, public = keys
    envelope = signed(private)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"][0]["digest"]["sha256"] = hashlib.sha256(b"evil").hexdigest()
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    ok, reason = check(b"evil", envelope, public.read_bytes())
    assert not ok and reason.startswith("signature:")


def test_tampered_payload_type_refused(keys: tuple[Path, Path]) -> None:
    private, public = keys
    envelope = signed(private) | {"payloadType": "text/plain"}
    ok, reason = check(DIFF.encode(), envelope, public.read_bytes())
    assert not ok and reason.startswith("payload type:")


def test_wrong_key_refused(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, _ = keys
    other_private, other_public = tmp_path / "other.pem", tmp_path / "other.pub.pem"
    attest.generate_keypair(other_private, other_public)
    ok, reason = check(DIFF.encode(), signed(private), other_public.read_bytes())
    assert not ok and reason.startswith("signature:")


def test_failed_result_refused(keys: tuple[Path, Path]) -> None:
    private, public = keys
    result = verified_result()
    result["verification"]["pass_to_pass"]["regressions"] = ["tests/test_calc.py::test_mul"]
    envelope = signed(private, result)
    statement = attest.statement_of(envelope)
    assert statement["predicate"]["failedTests"] == ["tests/test_calc.py::test_mul"]
    ok, reason = check(DIFF.encode(), envelope, public.read_bytes())
    assert not ok and reason.startswith("result:")


def test_unverified_job_is_failed_and_needs_an_explicit_digest(keys: tuple[Path, Path]) -> None:
    private, public = keys
    result = JobResult(run_id="r", status="not_verified", reason="tests_failed", message="no", diff=DIFF).as_json()
    assert result["diff"] is None
    with pytest.raises(ValueError, match="no diff"):
        build_statement(result)
    statement = build_statement(result, diff_sha256=hashlib.sha256(DIFF.encode()).hexdigest())
    assert statement["predicate"]["result"] == "FAILED"
    ok, reason = check(DIFF.encode(), sign_statement(statement, attest.load_private_key(private)), public.read_bytes())
    assert not ok and "tests_failed" in reason


def test_approval_required(keys: tuple[Path, Path]) -> None:
    private, public = keys
    pem = public.read_bytes()
    unreviewed = signed(private)
    assert check(DIFF.encode(), unreviewed, pem, require_approval=False)[0]
    ok, reason = check(DIFF.encode(), unreviewed, pem, require_approval=True)
    assert not ok and reason == "approval: required, but the record carries none"
    rejected = signed(private, approval=Approval(decision="reject", who="bob", comment="no tests"))
    ok, reason = check(DIFF.encode(), rejected, pem, require_approval=True)
    assert not ok and "bob decided 'reject'" in reason
    approved = signed(private, approval=Approval(decision="approve", who="alice", comment="lgtm"), submitter="carol")
    ok, reason = check(DIFF.encode(), approved, pem, require_approval=True)
    assert ok and "approved by alice" in reason
    ok, reason = check(DIFF.encode(), signed(private, approval=Approval(decision="approve", who="alice")), pem,
                       require_approval=True)
    assert not ok and "names no submitter" in reason
    approval = attest.statement_of(approved)["predicate"]["patcher"]["approval"]
    assert approval["decision"] == "approve" and approval["when"].endswith("Z") and approval["comment"] == "lgtm"


def test_approval_cannot_be_spliced_onto_another_record(keys: tuple[Path, Path]) -> None:
    private, public = keys
    approved = attest.statement_of(signed(private, approval=Approval(decision="approve", who="alice")))
    envelope = signed(private)
    statement = attest.statement_of(envelope)
    statement["predicate"]["patcher"]["approval"] = approved["predicate"]["patcher"]["approval"]
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    ok, reason = check(DIFF.encode(), envelope, public.read_bytes(), require_approval=True)
    assert not ok and reason.startswith("signature:")


def test_malformed_inputs_raise_bad_input(keys: tuple[Path, Path]) -> None:
    private, public = keys
    with pytest.raises(BadInput, match="not a PEM public key"):
        check(DIFF.encode(), signed(private), b"nonsense")
    with pytest.raises(BadInput, match="not an Ed25519 key"):
        ec_key = ec.generate_private_key(ec.SECP256R1()).public_key()
        check(DIFF.encode(), signed(private), ec_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(BadInput, match="DSSE envelope"):
        check(DIFF.encode(), {"payload": "x"}, public.read_bytes())
    with pytest.raises(BadInput, match="not JSON"):
        attest.parse_envelope("{")


def test_private_key_file_is_owner_only(keys: tuple[Path, Path]) -> None:
    private, _ = keys
    assert private.stat().st_mode & 0o777 == 0o600


def gate_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A real repository at the base of DIFF, with a pull request branch `fix` that applies it:
    (repo, tree of the base, tree of the result)."""
    repo = make_repo(tmp_path / "repo", {"calc.py": "def div(a, b):\n    return a / b\n"})
    base_tree = git(repo, "rev-parse", "HEAD^{tree}")
    git(repo, "checkout", "-q", "-b", "fix")
    (repo / "calc.py").write_text("def div(a, b):\n    if b == 0:\n        return None\n    return a / b\n")
    git(repo, "commit", "-qam", "fix")
    result_tree = git(repo, "rev-parse", "HEAD^{tree}")
    git(repo, "checkout", "-q", "main")
    return repo, base_tree, result_tree


def gate_files(tmp_path: Path, private: Path, **kw) -> tuple[Path, Path]:
    """The patch and its record, proved on the base of the repository `gate_repo` makes (the cwd of run_cli)."""
    repo, base_tree, result_tree = gate_repo(tmp_path)
    patch, record = tmp_path / "fix.diff", tmp_path / "fix.intoto.json"
    patch.write_bytes(DIFF.encode())
    result = verified_result()
    result["provenance"] = {"repo": str(repo), "source_commit": git(repo, "rev-parse", "main"), "dirty": False,
                            "tree": base_tree, "result_tree": result_tree, "suite_command": "python -m pytest -q",
                            "reproduction": {"command": "python -m pytest -q tests/test_calc.py::test_div",
                                             "source": "pytest_traceback"}}
    kw.setdefault("submitter", "carol")
    record.write_text(json.dumps(signed(private, result, **kw)))
    return patch, record


def test_run_gate_exit_codes(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, public = keys
    patch, record = gate_files(tmp_path, private)
    repo = tmp_path / "repo"
    assert run_gate(patch, record, public, repo=repo)[0] == 0
    code, line = run_gate(patch, record, public, require_approval=True, repo=repo)
    assert (code, line) == (1, "gate: refused: approval: required, but the record carries none")
    assert run_gate(patch, record, tmp_path / "missing.pem", repo=repo)[0] == 2
    (tmp_path / "junk.json").write_text("[1, 2]")
    code, line = run_gate(patch, tmp_path / "junk.json", public, repo=repo)
    assert code == 2 and "DSSE envelope" in line


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PATCHER), "gate", *map(str, args)], capture_output=True, text=True, timeout=60,
                          cwd=cwd)


def test_gate_cli(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, public = keys
    patch, record = gate_files(tmp_path, private, approval=Approval(decision="approve", who="alice"))
    repo = tmp_path / "repo"
    done = run_cli("--patch", patch, "--attestation", record, "--public-key", public, "--require-approval", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "approved by alice" in done.stdout and "reproduction from pytest_traceback" in done.stdout
    done = run_cli("--base", "main", "--head", "fix", "--attestation", record, "--public-key", public, cwd=repo)
    assert done.returncode == 0, done.stderr
    patch.write_bytes(DIFF.encode() + b"+evil\n")
    done = run_cli("--patch", patch, "--attestation", record, "--public-key", public, cwd=repo)
    assert done.returncode == 1 and done.stderr.startswith("gate: refused: digest:")
    assert len(done.stderr.strip().splitlines()) == 1
    record.write_text("not json")
    done = run_cli("--patch", patch, "--attestation", record, "--public-key", public, cwd=repo)
    assert done.returncode == 2 and "not JSON" in done.stderr


def test_the_gate_binds_the_record_to_this_repository(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, public = keys
    patch, record = gate_files(tmp_path, private)
    repo = tmp_path / "repo"

    def gate(*args: str, **kw: object) -> tuple[int, str]:
        return run_gate(*args, record, public, repo=repo, **kw)  # type: ignore[arg-type]

    assert gate(patch)[0] == 0 and gate(None, base="main", head="fix")[0] == 0
    git(repo, "checkout", "-q", "-b", "other", "main")
    (repo / "calc.py").write_text("def div(a, b):\n    return a // b\n")
    git(repo, "commit", "-qam", "another base")
    code, line = gate(patch)
    assert code == 1 and line.startswith("gate: refused: base: the tree of"), line
    git(repo, "checkout", "-q", "fix")
    (repo / "extra.py").write_text("evil = 1\n")
    git(repo, "add", "extra.py")
    git(repo, "commit", "-qm", "more than the verified patch")
    code, line = gate(None, base="main", head="fix")
    assert code == 1 and "the result is not the base plus the verified patch" in line, line
    code, line = gate(patch, base="main", suite="python -m pytest -q tests/test_calc.py")
    assert code == 1 and line.startswith("gate: refused: suite:"), line
    assert gate(None)[0] == 2 and gate(patch, head="fix")[0] == 2


def test_an_approval_by_the_submitter_does_not_satisfy_the_gate(keys: tuple[Path, Path], tmp_path: Path) -> None:
    private, public = keys
    patch, record = gate_files(tmp_path, private, approval=Approval(decision="approve", who="carol"))
    code, line = run_gate(patch, record, public, require_approval=True, repo=tmp_path / "repo")
    assert (code, line) == (1, "gate: refused: approval: by carol, who submitted the job")
