"""Signed verification records: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519.

The statement's subject is the diff (`patch.diff`, by sha256 of its UTF-8 bytes); its predicate is the
in-toto test-result predicate (result PASSED/FAILED, configuration, passed/failed/warned tests) with
patcher's own fields under `predicate["patcher"]` (run id, base commit, image, commands, results) and
what the result was proved on (`provenance.py`): repo, source commit, dirty, the staged tree and the tree
with the diff applied, the reproduction command and its source, the suite, the image id actually used,
the patcher version and who submitted the job. `patcher gate` checks them against its repository.

Approval binding: the approval (decision, who, when, comment) is a field of that same extension,
`predicate["patcher"]["approval"]`, and the whole statement is signed again when the review is recorded.
The one signature covers the diff digest, the test results and the approval together, so an approval
cannot be lifted onto another patch or another record; the envelope signed before review stays valid
for gates that do not require approval, and a reject decision never satisfies one that does.

    envelope = sign_statement(build_statement(result.as_json(), image=tag), load_private_key(path))
    ok, reason = check(patch_bytes, envelope, public_pem, require_approval=True)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field

from patcher.errors import BadInput
from patcher.review.dsse import (
    PAYLOAD_TYPE,
    b64,
    keyid_of,
    pae,
    require_envelope,
    sign_statement,
)

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT_PREDICATE = "https://in-toto.io/attestation/test-result/v0.1"
EXTENSION = "patcher"
"""Key of patcher's own fields inside the predicate."""
EXTENSION_SCHEMA = "patcher-verification/v0.1"
SUBJECT_NAME = "patch.diff"


class AttestConfig(BaseModel):
    """Where the signing key lives (the server's settings hand this over)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    signing_key: Path
    """PEM file (PKCS#8, unencrypted) of the Ed25519 private key that signs records (env PATCHER_SIGNING_KEY)."""


class Approval(BaseModel):
    """A reviewer's decision, bound into the signed record at review time."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    decision: Literal["approve", "reject"]
    """What the reviewer decided."""
    who: str = Field(min_length=1)
    """The reviewer, as the server authenticated them."""
    when: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the decision was recorded (UTC)."""
    comment: str = ""
    """The reviewer's comment."""
    carried_from: str | None = None
    """The job the decision was recorded on, when it is carried onto a re-verification of the same diff on a
    new base (None: recorded on this job itself)."""


# keys ------------------------------------------------------------------------------------------------

def generate_keypair(private_path: Path, public_path: Path | None = None) -> str:
    """Write a new Ed25519 key pair as PEM (private file mode 0600); return the key id."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public = key.public_key()
    if public_path is not None:
        public_path.write_bytes(public_pem(public))
    return keyid_of(public)


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as e:
        raise BadInput(f"cannot read signing key {path}: {e.strerror}") from e
    except (ValueError, TypeError) as e:
        raise BadInput(f"signing key {path} is not an unencrypted PEM private key") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise BadInput(f"signing key {path} is not an Ed25519 key")
    return key


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as e:
        raise BadInput("the public key is not a PEM public key") from e
    if not isinstance(key, Ed25519PublicKey):
        raise BadInput("the public key is not an Ed25519 key")
    return key


# statement -------------------------------------------------------------------------------------------

def build_statement(result: Mapping[str, Any], *, image: str | None = None, suite_command: str | None = None,
                    approval: Approval | None = None, diff_sha256: str | None = None,
                    submitter: str | None = None) -> dict[str, Any]:
    """The in-toto Statement for one job result (`JobResult.as_json()`).

    A non-verified result carries no diff; pass the digest of the diff it judged as `diff_sha256` to
    record the FAILED outcome. Raises ValueError when there is no digest to name.
    """
    digest = result.get("diff_sha256") or diff_sha256
    if not digest:
        raise ValueError("the result names no diff to attest (no diff_sha256)")
    ver = result.get("verification") or {}
    repro = ver.get("reproduction") or {}
    p2p = ver.get("pass_to_pass") or {}
    regressions = list(p2p.get("regressions") or [])
    proved = repro.get("after") == "passed" and not regressions
    outcome = {"verified": "PASSED", "unjudged": "WARNED"}.get(str(result.get("status")), "FAILED") if proved \
        else "FAILED"  # WARNED: the tests prove it, a judge could not judge it (coverage.missing)
    prov = result.get("provenance") or {}
    suite_command = prov.get("suite_command") or suite_command
    commands = {k: v for k, v in (("reproduction", repro.get("command")), ("suite", suite_command)) if v}
    extension = {
        "schema": EXTENSION_SCHEMA,
        "run_id": result.get("run_id"),
        "status": result.get("status"),
        "reason": result.get("reason"),
        "base_commit": result.get("base_commit"),
        "image": prov.get("image") or image,
        "image_id": prov.get("image_id"),
        "repo": prov.get("repo"),
        "ref": prov.get("ref"),
        "source_commit": prov.get("source_commit"),
        "dirty": prov.get("dirty"),
        "tree": prov.get("tree"),
        "result_tree": prov.get("result_tree"),
        "patcher_version": prov.get("patcher_version"),
        "submitter": submitter,
        "files_changed": list(result.get("files_changed") or []),
        "commands": commands,
        "reproduction": {"before": repro.get("before"), "after": repro.get("after"),
                         "source": (prov.get("reproduction") or {}).get("source")},
        "pass_to_pass": {"total": p2p.get("total", 0), "regressions": regressions},
        "unjudged": list((ver.get("coverage") or {}).get("missing") or []),
        "duration_s": ver.get("duration_s"),
        "signed_at": _iso(datetime.now(UTC)),
        "approval": _approval_json(approval),
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT_NAME, "digest": {"sha256": digest}}],
        "predicateType": TEST_RESULT_PREDICATE,
        "predicate": {
            "result": outcome,
            "configuration": [{"name": name, "digest": {"sha256": hashlib.sha256(cmd.encode()).hexdigest()},
                               "annotations": {"command": cmd}} for name, cmd in commands.items()],
            "passedTests": list(ver.get("fail_to_pass") or []),
            "failedTests": regressions,
            "warnedTests": list(ver.get("flaky") or []),
            EXTENSION: extension,
        },
    }


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _approval_json(approval: Approval | None) -> dict[str, Any] | None:
    if approval is None:
        return None
    carried = {"carried_from": approval.carried_from} if approval.carried_from else {}
    return {"decision": approval.decision, "who": approval.who, "when": _iso(approval.when),
            "comment": approval.comment, **carried}


def attest(result: Mapping[str, Any], config: AttestConfig, *, image: str | None = None,
           suite_command: str | None = None, approval: Approval | None = None,
           submitter: str | None = None) -> dict[str, Any]:
    """Build and sign the record of a result with the key named by `config` (again at review time)."""
    statement = build_statement(result, image=image, suite_command=suite_command, approval=approval,
                                submitter=submitter)
    return sign_statement(statement, load_private_key(config.signing_key))


def parse_envelope(text: str | bytes) -> dict[str, Any]:
    """The envelope of an attestation file; BadInput when it is not one."""
    try:
        envelope = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"the attestation is not JSON: {e}") from e
    return require_envelope(envelope)


def statement_of(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """The statement inside an envelope, NOT verified (for display only; gates use `check`)."""
    return json.loads(b64(envelope["payload"], "payload"))


# verification ----------------------------------------------------------------------------------------

def check(patch_bytes: bytes | None, envelope: Mapping[str, Any], public_key_pem: bytes,
          require_approval: bool = False, accept_unjudged: bool = False) -> tuple[bool, str]:
    """Whether the envelope proves `patch_bytes` verified (and approved by someone other than its submitter,
    if required), with one-line reason. `patch_bytes=None` skips the digest: the caller binds the content
    another way (the gate's tree checks). A record whose tests proved the patch and whose judges could not all
    judge it (WARNED, status `unjudged`) passes only with `accept_unjudged`.

    Raises BadInput when the envelope or the key is malformed; every failed check is (False, reason).
    """
    key = load_public_key(public_key_pem)
    envelope = require_envelope(envelope)
    if envelope["payloadType"] != PAYLOAD_TYPE:
        return False, f"payload type: {envelope['payloadType']!r} is not {PAYLOAD_TYPE!r}"
    body = b64(envelope["payload"], "payload")
    if not any(_verifies(key, sig, body) for sig in envelope["signatures"]):
        return False, f"signature: no signature verifies with the public key {keyid_of(key)[:16]}…"
    try:
        statement = json.loads(body)
        predicate = statement["predicate"]
        subjects = statement["subject"]
        ext = predicate.get(EXTENSION) or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return False, "statement: the signed payload is not an in-toto statement"
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != TEST_RESULT_PREDICATE:
        return False, f"statement: not an {STATEMENT_TYPE} with the {TEST_RESULT_PREDICATE} predicate"
    attested = [s.get("digest", {}).get("sha256") for s in subjects if isinstance(s, dict)]
    actual = hashlib.sha256(patch_bytes).hexdigest() if patch_bytes is not None else str((attested or [""])[0])
    if patch_bytes is not None and actual not in attested:
        return False, f"digest: the patch's sha256 {actual[:16]}… is not the attested {_first(attested)}"
    warned = predicate.get("result") == "WARNED" and ext.get("status") == "unjudged"
    if warned and not accept_unjudged:
        missing = "; ".join(str(m) for m in (ext.get("unjudged") or [])[:2]) or "a judge could not judge it"
        return False, (f"result: unjudged: the tests prove the patch, but not every judge could judge it ({missing});"
                       " pass --accept-unjudged to accept that")
    if predicate.get("result") != "PASSED" and not warned:
        return False, f"result: the record says {predicate.get('result')!r} ({ext.get('reason')}), not PASSED"
    approval = ext.get("approval") if isinstance(ext, dict) else None
    if require_approval:
        if not isinstance(approval, dict):
            return False, "approval: required, but the record carries none"
        if approval.get("decision") != "approve":
            return False, f"approval: {approval.get('who')} decided {approval.get('decision')!r}, not 'approve'"
        if not ext.get("submitter") or approval.get("who") == ext.get("submitter"):
            return False, (f"approval: by {approval.get('who')}, who submitted the job" if ext.get("submitter")
                           else "approval: the record names no submitter, so the approver cannot be told apart")
    how = f"; approved by {approval.get('who')} at {approval.get('when')}" if isinstance(approval, dict) \
        and approval.get("decision") == "approve" else ""
    if how and approval and approval.get("carried_from"):
        how += f" (on job {approval.get('carried_from')}, the same diff on its earlier base)"
    said = "proved by its tests (unjudged: accepted)" if warned else "verified"
    return True, f"ok: patch sha256 {actual[:16]}… {said} on {ext.get('base_commit')}{how}"


def _verifies(key: Ed25519PublicKey, sig: Any, body: bytes) -> bool:
    if not isinstance(sig, dict) or not isinstance(sig.get("sig"), str):
        return False
    try:
        key.verify(b64(sig["sig"], "signature"), pae(PAYLOAD_TYPE, body))
    except (InvalidSignature, BadInput):
        return False
    return True


def _first(digests: list[Any]) -> str:
    return f"{str(digests[0])[:16]}…" if digests and digests[0] else "(none)"
