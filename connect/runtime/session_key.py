"""The session key of ``connect.protocol=sessioned`` (KIP-507).

The leader generates a random key and writes it to the config topic (record ``session-key``, as
Kafka's ``KafkaConfigBackingStore``); every worker reads it. The leader replaces it when it is
``inter.worker.key.ttl.ms`` old (the expiry counts from the key's creation time, so a new
leader keeps the old leader's schedule) or was generated with other settings. A worker signs its internal requests
to another (``PUT /connectors/{name}/fence``) with an HMAC of the request body under that key
(headers ``X-Connect-Authorization`` and ``X-Connect-Request-Signature-Algorithm``); the receiver
refuses a request without a signature (400) or with a wrong one (403), with Kafka's messages.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

ALGORITHM = "HmacSHA256"
# Java's Mac names -> hashlib digests, with the key size (bytes) of Java's KeyGenerator default.
MAC_ALGORITHMS: dict[str, tuple[str, int]] = {
    "HmacSHA1": ("sha1", 64), "HmacSHA224": ("sha224", 28), "HmacSHA256": ("sha256", 32),
    "HmacSHA384": ("sha384", 48), "HmacSHA512": ("sha512", 64)}
SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
CONFIG_KEY = "session-key"


@dataclass(frozen=True)
class SessionKey:
    key: bytes
    algorithm: str
    created_ms: int

    @classmethod
    def generate(cls, algorithm: str = ALGORITHM, size_bits: int | None = None) -> SessionKey:
        """A fresh random key (``inter.worker.key.generation.algorithm`` and ``.size``)."""
        size = size_bits // 8 if size_bits else MAC_ALGORITHMS[algorithm][1]
        return cls(secrets.token_bytes(size), algorithm, int(time.time() * 1000))

    def expires_ms(self, ttl_ms: int) -> float:
        """When the leader replaces this key (``inter.worker.key.ttl.ms``; 0: never)."""
        return self.created_ms + ttl_ms if ttl_ms > 0 else float("inf")

    def matches(self, algorithm: str, size_bits: int | None) -> bool:
        """Generated as this worker's settings ask (else the leader replaces it at once)."""
        size = size_bits // 8 if size_bits else MAC_ALGORITHMS.get(algorithm, ("", 0))[1]
        return self.algorithm == algorithm and len(self.key) == size

    def to_record(self) -> dict[str, Any]:
        return {"key": base64.b64encode(self.key).decode(), "algorithm": self.algorithm,
                "creation-timestamp": self.created_ms}

    @classmethod
    def from_record(cls, value: Any) -> SessionKey | None:
        try:
            return cls(base64.b64decode(value["key"]), str(value["algorithm"]),
                       int(value["creation-timestamp"]))
        except (KeyError, TypeError, ValueError):
            return None

    def sign(self, body: bytes, algorithm: str = ALGORITHM) -> dict[str, str]:
        """The headers that sign ``body`` with the Mac ``algorithm``
        (``inter.worker.signature.algorithm``)."""
        digest = hmac.new(self.key, body, MAC_ALGORITHMS[algorithm][0]).digest()
        return {SIGNATURE_HEADER: base64.b64encode(digest).decode(), ALGORITHM_HEADER: algorithm}


class SignatureError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def verify(key: SessionKey | None, body: bytes, headers: Any,
           algorithms: list[str] | None = None) -> None:
    """Raise :class:`SignatureError` unless ``headers`` sign ``body`` with ``key`` (the current
    one only, as Kafka's DistributedHerder: a request signed with the key just replaced gets 403
    and its sender retries once it has read the new key) under one of ``algorithms``
    (``inter.worker.verification.algorithms``)."""
    permitted = algorithms or [ALGORITHM]
    signature = headers.get(SIGNATURE_HEADER)
    algorithm = headers.get(ALGORITHM_HEADER)
    if not signature or not algorithm:
        raise SignatureError("Internal request missing required signature", 400)
    if algorithm not in permitted:
        raise SignatureError(
            f"This worker does not support the '{algorithm}' key signing algorithm used by other "
            f"workers. This worker is currently configured to use: [{', '.join(permitted)}]. "
            "Check that all workers' configuration files permit the same set of signature "
            "algorithms, and correct any misconfigured worker and restart it.", 400)
    if key is None:
        raise SignatureError("This worker is still starting up and has not been able to read a "
                             "session key from the config topic yet", 503)
    expected = key.sign(body, algorithm)[SIGNATURE_HEADER]
    if not hmac.compare_digest(expected.encode(), str(signature).encode()):
        raise SignatureError("Internal request contained invalid signature.", 403)
