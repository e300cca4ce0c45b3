"""What a verified result is worth to others: signed attestations of what was proved on what
(provenance), and the gate that checks one against a repository before a merge.
"""

from patcher.review.attestation import Approval, AttestConfig, attest, generate_keypair, load_private_key, statement_of
from patcher.review.gate import run_gate
from patcher.review.provenance import base_provenance, reproduction_of, staged_provenance, with_result

__all__ = [
    "Approval",
    "AttestConfig",
    "attest",
    "base_provenance",
    "generate_keypair",
    "load_private_key",
    "reproduction_of",
    "run_gate",
    "staged_provenance",
    "statement_of",
    "with_result",
]
