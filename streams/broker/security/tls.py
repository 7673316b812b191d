"""Server TLS contexts from Kafka's PEM store settings, and principals from certificates.

Kafka's names (KIP-651): `ssl.keystore.type=PEM` with `ssl.keystore.location` (one file holding
the private key and the certificate chain) or inline `ssl.keystore.key` +
`ssl.keystore.certificate.chain`; `ssl.truststore.type=PEM` with `ssl.truststore.location` or
inline `ssl.truststore.certificates`; `ssl.client.auth=required|requested|none`. The principal of
a client certificate is its subject in RFC 2253 form mapped by `ssl.principal.mapping.rules`
(KIP-371), as Kafka's DefaultKafkaPrincipalBuilder does.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

from .listeners import ListenerError

Lookup = Callable[[str], str | None]

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def server_context(get: Lookup, listener: str) -> ssl.SSLContext:
    """An SSLContext for one TLS listener; `get(key)` returns the listener's value of a key."""
    for kind in ("keystore", "truststore"):
        store_type = (get(f"ssl.{kind}.type") or "JKS").upper()
        if store_type != "PEM" and (get(f"ssl.{kind}.location") or kind == "keystore"):
            raise ListenerError(
                f"ssl.{kind}.type={store_type} for listener {listener}: this broker reads PEM "
                f"stores only; set ssl.{kind}.type=PEM (convert JKS/PKCS12 with openssl/keytool)")
    location = get("ssl.keystore.location")
    inline_key = get("ssl.keystore.key")
    chain = get("ssl.keystore.certificate.chain")
    if location and inline_key:
        raise ListenerError(f"listener {listener}: set ssl.keystore.location or ssl.keystore.key, "
                            "not both")
    if bool(inline_key) != bool(chain):
        raise ListenerError(f"listener {listener}: ssl.keystore.key and "
                            "ssl.keystore.certificate.chain must be set together")
    if not location and not inline_key:
        raise ListenerError(f"listener {listener} uses TLS but has no key: set "
                            "ssl.keystore.location (PEM key + chain) or ssl.keystore.key")
    if get("ssl.keystore.password"):
        raise ListenerError(f"listener {listener}: ssl.keystore.password must not be set for a "
                            "PEM keystore (Kafka refuses it; use ssl.key.password for an "
                            "encrypted key)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocol = get("ssl.protocol") or "TLSv1.3"
    enabled = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
               if p.strip()]
    versions = [_PROTOCOLS[p] for p in enabled if p in _PROTOCOLS]
    if not versions:
        raise ListenerError(f"ssl.enabled.protocols={','.join(enabled)} for listener {listener}: "
                            "only TLSv1.2 and TLSv1.3 are supported")
    if protocol not in _PROTOCOLS and protocol not in ("TLS",):
        raise ListenerError(f"ssl.protocol={protocol} for listener {listener}: use TLSv1.2 or "
                            "TLSv1.3")
    context.minimum_version = min(versions)
    context.maximum_version = max(versions)
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        try:  # TLS 1.2 suites, by OpenSSL's names; TLS 1.3's own suites are always on
            context.set_ciphers(":".join(c.strip() for c in ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise ListenerError(
                f"ssl.cipher.suites for listener {listener}: OpenSSL knows none of "
                f"{ciphers!r}; give OpenSSL names (e.g. ECDHE-RSA-AES128-GCM-SHA256), not "
                "Java's (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)") from None
    password = get("ssl.key.password")
    try:
        if location:
            context.load_cert_chain(location, password=password)
        else:
            _load_inline(context, str(inline_key), str(chain), password)
    except (OSError, ssl.SSLError) as exc:
        what = f"ssl.keystore.location={location}" if location else "ssl.keystore.key"
        raise ListenerError(f"listener {listener}: cannot load {what}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    client_auth = (get("ssl.client.auth") or "none").lower()
    if client_auth not in ("none", "requested", "required"):
        raise ListenerError(f"ssl.client.auth={client_auth} for listener {listener}: use "
                            "required, requested or none")
    trust_location = get("ssl.truststore.location")
    trust_inline = get("ssl.truststore.certificates")
    try:
        if trust_location:
            context.load_verify_locations(cafile=trust_location)
        elif trust_inline:
            context.load_verify_locations(cadata=_pem_blocks(trust_inline))
    except (OSError, ssl.SSLError) as exc:
        raise ListenerError(f"listener {listener}: cannot load the truststore: {exc}") from None
    if client_auth != "none" and not (trust_location or trust_inline):
        raise ListenerError(f"ssl.client.auth={client_auth} for listener {listener} needs "
                            "ssl.truststore.location or ssl.truststore.certificates")
    context.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                           "required": ssl.CERT_REQUIRED}[client_auth]
    return context


def _pem_blocks(text: str) -> str:
    """Inline PEM in a properties file may have its line breaks flattened to spaces."""
    return re.sub(r"-----(BEGIN|END) ([A-Z ]+)-----",
                  lambda m: f"\n-----{m.group(1)} {m.group(2)}-----\n",
                  _unflatten(text)).strip() + "\n"


def _unflatten(text: str) -> str:
    # Base64 bodies never contain spaces: turn the spaces between marker lines into newlines.
    parts = re.split(r"(-----(?:BEGIN|END) [A-Z ]+-----)", text)
    return "".join(p if p.startswith("-----") else p.strip().replace(" ", "\n") for p in parts)


def _load_inline(context: ssl.SSLContext, key: str, chain: str, password: str | None) -> None:
    """ssl can only load keys from files: write key + chain to a private temporary file."""
    fd, path = tempfile.mkstemp(prefix="streams-key-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(_pem_blocks(key) + _pem_blocks(chain))
        context.load_cert_chain(path, password=password)
    finally:
        Path(path).unlink(missing_ok=True)


# -- principals ---------------------------------------------------------------------------------

# Short attribute names Java's X500Principal.getName(RFC2253) writes; the rest go out as OIDs.
_SHORT = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O",
          "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
          "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5",
         "title": "2.5.4.12", "surname": "2.5.4.4", "givenName": "2.5.4.42"}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def subject_dn(peercert: dict) -> str:
    """RFC 2253 form of a certificate subject from ssl's getpeercert(): the last RDN first."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        parts = []
        for name, value in rdn:
            attr = _SHORT.get(name) or _OIDS.get(name) or name
            parts.append(f"{attr}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)[^,]*)\s*(?:,|$)")


class PrincipalMapper:
    """`ssl.principal.mapping.rules`: `RULE:pattern/replacement/[LU]` entries or `DEFAULT`,
    first full match wins (Kafka's SslPrincipalMapper)."""

    def __init__(self, rules: str | None) -> None:
        self.rules: list[tuple[re.Pattern[str], str, str] | None] = []
        text = (rules or "DEFAULT").strip()
        pos = 0
        while pos < len(text):
            match = _RULE.match(text, pos)
            if not match or match.end() == pos:
                raise ListenerError(f"ssl.principal.mapping.rules: cannot parse '{text[pos:]}'")
            if match.group(1) == "DEFAULT":
                self.rules.append(None)
            else:
                pattern = match.group(2).replace("\\/", "/")
                replacement = re.sub(r"\$(\d)", r"\\g<\1>", match.group(3).replace("\\/", "/"))
                try:
                    self.rules.append((re.compile(pattern), replacement, match.group(4)))
                except re.error as exc:
                    raise ListenerError(f"ssl.principal.mapping.rules: bad pattern "
                                        f"'{pattern}': {exc}") from None
            pos = match.end()

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule is None:
                return dn
            pattern, replacement, case = rule
            if pattern.fullmatch(dn):
                result = pattern.sub(replacement, dn)
                return result.lower() if case == "L" else result.upper() if case == "U" \
                    else result
        raise PermissionError(f"no ssl.principal.mapping.rules rule matches '{dn}'")
