"""Test certificates made on the fly with ``cryptography`` (never committed).

``make_pki(dir)`` writes a CA, a server certificate for 127.0.0.1/localhost and a client
certificate, each as the PEM files Kafka's ``ssl.keystore.type=PEM`` expects: the keystore file
holds the PKCS#8 private key followed by the certificate chain (KIP-651), the truststore file the
CA certificate. Both the broker side and the client side tests use it.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Identity:
    """One certificate: its key, its chain (leaf first) and the combined keystore file."""

    key_pem: str  # PKCS#8, encrypted when made with a password
    chain_pem: str
    keystore: Path  # key + chain in one file (ssl.keystore.location)
    subject: str  # RFC 2253, as Kafka's principal builder prints it


@dataclass(frozen=True)
class Pki:
    ca_pem: str
    truststore: Path  # the CA certificate (ssl.truststore.location)
    server: Identity
    client: Identity


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "streams-tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None) -> str:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password
        else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             encryption).decode()


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _issue(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, cn: str,
           server: bool) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder()
               .subject_name(_name(cn)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(_now() - datetime.timedelta(minutes=5))
               .not_valid_after(_now() + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def make_pki(directory: Path, key_password: str | None = None) -> Pki:
    """A fresh CA with one server and one client certificate, written under ``directory``.

    ``key_password`` encrypts both private keys (then ``ssl.key.password`` is needed).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder()
               .subject_name(_name("streams-test-ca")).issuer_name(_name("streams-test-ca"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(_now() - datetime.timedelta(minutes=5))
               .not_valid_after(_now() + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=True, key_cert_sign=True, crl_sign=True,
                   content_commitment=False, key_encipherment=False, data_encipherment=False,
                   key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    ca_pem = _cert_pem(ca_cert)
    truststore = directory / "ca.pem"
    truststore.write_text(ca_pem)

    def identity(cn: str, server: bool) -> Identity:
        key, cert = _issue(ca_key, ca_cert, cn, server)
        key_pem, chain_pem = _key_pem(key, key_password), _cert_pem(cert) + ca_pem
        keystore = directory / f"{cn}.keystore.pem"
        keystore.write_text(key_pem + chain_pem)
        keystore.chmod(0o600)
        return Identity(key_pem, chain_pem, keystore, cert.subject.rfc4514_string())

    return Pki(ca_pem, truststore, identity("server", True), identity("client", False))
