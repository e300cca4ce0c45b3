"""DSSE envelopes (the in-toto signing wrapper): pre-authentication encoding, signing, reading one back."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from patcher.errors import BadInput

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def keyid_of(key: Ed25519PublicKey) -> str:
    """sha256 of the raw 32-byte public key, hex: a hint naming the key, never trusted on its own."""
    return hashlib.sha256(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding: "DSSEv1" SP len(type) SP type SP len(body) SP body."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def sign_statement(statement: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The DSSE envelope of `statement`, signed with `key`."""
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    sig = key.sign(pae(PAYLOAD_TYPE, body))
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(body).decode(),
            "signatures": [{"keyid": keyid_of(key.public_key()), "sig": base64.b64encode(sig).decode()}]}


def require_envelope(envelope: Any) -> dict[str, Any]:
    if not isinstance(envelope, Mapping) or not isinstance(envelope.get("payloadType"), str) \
            or not isinstance(envelope.get("payload"), str) or not isinstance(envelope.get("signatures"), list):
        raise BadInput("the attestation is not a DSSE envelope (payloadType, payload, signatures)")
    return dict(envelope)


def b64(text: str, what: str) -> bytes:
    try:  # DSSE allows standard or URL-safe base64
        return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError) as e:
        raise BadInput(f"the attestation's {what} is not base64") from e
