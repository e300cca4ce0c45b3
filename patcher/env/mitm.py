"""A certificate authority of one setup step, so the host's proxy can add credentials to an https index.

Inside end-to-end TLS the proxy could add nothing. For an https index that has credentials, the proxy
answers the container's CONNECT with TLS of its own (a certificate for that host, signed by this CA,
which the container trusts for the setup step only), reads the request, adds the credentials and sends
it on over a new TLS connection it verifies against the host's CA bundle. The CA is made per proxy,
name-constrained to those index hosts, valid for a day; its key never leaves this process and a
private temporary directory (never the socket directory the container mounts).
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PEM = serialization.Encoding.PEM


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _subtree(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_network(host))
    except ValueError:
        return x509.DNSName(host)


class ProxyCA:
    """`ca_pem` for the container's trust; `server_context(host)` for the proxy's side of its TLS."""

    def __init__(self, hosts: list[str]) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "patcher setup proxy")])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder().subject_name(self._name).issuer_name(self._name)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.NameConstraints(permitted_subtrees=[_subtree(h) for h in sorted(set(hosts))],
                                                excluded_subtrees=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256()))
        self.ca_pem = self._cert.public_bytes(PEM)
        self._dir = Path(tempfile.mkdtemp(prefix="patcher-proxy-ca-"))  # mode 0700
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def server_context(self, host: str) -> ssl.SSLContext:
        with self._lock:
            if host not in self._contexts:
                self._contexts[host] = self._leaf(host)
            return self._contexts[host]

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def _leaf(self, host: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self._name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([_general_name(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256()))
        stem = self._dir / f"leaf-{len(self._contexts)}"
        stem.with_suffix(".pem").write_bytes(cert.public_bytes(PEM) + self.ca_pem)
        stem.with_suffix(".key").write_bytes(key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(stem.with_suffix(".pem"), stem.with_suffix(".key"))
        return context
