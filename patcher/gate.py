"""`patcher gate`: a merge gate over a signed verification record.

Exit 0 only when the signature is valid, the digest matches the patch and the result passed (and, if
asked, the record carries an approval); 1 with one line naming the failed check; 2 when a file is
unreadable or malformed.
"""

from __future__ import annotations

from pathlib import Path

from .attest import check, parse_envelope
from .errors import BadInput


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read {what} {path}: {e.strerror}") from e


def run_gate(patch: Path, attestation: Path, public_key: Path, require_approval: bool = False) -> tuple[int, str]:
    """(exit code, one line) for the gate over these three files."""
    try:
        patch_bytes = _read(patch, "patch")
        envelope = parse_envelope(_read(attestation, "attestation"))
        ok, reason = check(patch_bytes, envelope, _read(public_key, "public key"), require_approval)
    except BadInput as e:
        return 2, f"gate: bad input: {e}"
    return (0, f"gate: {reason}") if ok else (1, f"gate: refused: {reason}")
