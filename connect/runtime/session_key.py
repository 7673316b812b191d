"""The session key of ``connect.protocol=sessioned`` (KIP-507).

The leader generates a random key and writes it to the config topic (record ``session-key``, as
Kafka's ``KafkaConfigBackingStore``); every worker reads it. A worker signs its internal requests
to another (``PUT /connectors/{name}/fence``) with an HMAC of the request body under that key
(headers ``X-Connect-Authorization`` and ``X-Connect-Request-Signature-Algorithm``); the receiver
refuses a request without a signature (400) or with a wrong one (403), with Kafka's messages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

ALGORITHM = "HmacSHA256"
SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
CONFIG_KEY = "session-key"


@dataclass(frozen=True)
class SessionKey:
    key: bytes
    algorithm: str
    created_ms: int

    @classmethod
    def generate(cls) -> SessionKey:
        return cls(secrets.token_bytes(32), ALGORITHM, int(time.time() * 1000))

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

    def sign(self, body: bytes) -> dict[str, str]:
        """The headers that sign ``body``."""
        digest = hmac.new(self.key, body, hashlib.sha256).digest()
        return {SIGNATURE_HEADER: base64.b64encode(digest).decode(),
                ALGORITHM_HEADER: self.algorithm}


class SignatureError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def verify(key: SessionKey | None, body: bytes, headers: Any) -> None:
    """Raise :class:`SignatureError` unless ``headers`` sign ``body`` with ``key``."""
    signature = headers.get(SIGNATURE_HEADER)
    algorithm = headers.get(ALGORITHM_HEADER)
    if not signature or not algorithm:
        raise SignatureError("Internal request missing required signature", 400)
    if algorithm != ALGORITHM:
        raise SignatureError(f"This worker does not support the '{algorithm}' algorithm for "
                             "verifying internal requests", 400)
    if key is None:
        raise SignatureError("This worker is still starting up and has not been able to read a "
                             "session key from the config topic yet", 503)
    expected = key.sign(body)[SIGNATURE_HEADER]
    if not hmac.compare_digest(expected.encode(), str(signature).encode()):
        raise SignatureError("Internal request contained invalid signature.", 403)
