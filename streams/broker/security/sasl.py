"""The server side of SASL on a connection: SaslHandshake v1 then SaslAuthenticate rounds.

Kafka's SaslServerAuthenticator states: before authentication a SASL listener takes ApiVersions
and SaslHandshake, then SaslAuthenticate; any other request closes the connection
("Unexpected Kafka request of type X during SASL handshake"). An unknown mechanism is answered
UNSUPPORTED_SASL_MECHANISM (33) with the enabled list, failed credentials
SASL_AUTHENTICATION_FAILED (58); both then close the connection. PLAIN follows RFC 4616 and
Kafka's PlainSaslServer (its client-visible messages); SCRAM is in scram.py.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Protocol

from .scram import MECHANISMS as SCRAM_MECHANISMS
from .scram import ScramError, ScramServer, ScramStore

log = logging.getLogger("streams.broker.security")

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
ANONYMOUS = "User:ANONYMOUS"


class AuthenticationFailed(Exception):
    """Credentials refused; str(exc) is what the client is told (never a password)."""


class Mechanism(Protocol):
    complete: bool
    user: str

    def evaluate(self, data: bytes) -> bytes: ...


class PlainServer:
    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.complete = False
        self.user = ""

    def evaluate(self, data: bytes) -> bytes:
        tokens = data.decode("utf-8", "replace").split("\0")
        if len(tokens) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, user, password = tokens
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.users.get(user)
        # Compare even for an unknown user, so that timing does not tell which users exist.
        ok = hmac.compare_digest((expected or "\0").encode(), password.encode())
        if expected is None or not ok:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        self.user = user
        self.complete = True
        return b""


class ScramMechanism:
    def __init__(self, mechanism: str, store: ScramStore) -> None:
        self.server = ScramServer(mechanism, store)
        self.mechanism = mechanism

    @property
    def complete(self) -> bool:
        return self.server.complete

    @property
    def user(self) -> str:
        return self.server.user

    def evaluate(self, data: bytes) -> bytes:
        try:
            return self.server.evaluate(data)
        except (ScramError, ValueError, UnicodeDecodeError) as exc:
            log.info("SCRAM authentication failed: %s", exc)
            # Kafka's generic text for SaslException: unknown user and bad proof look alike.
            raise AuthenticationFailed(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}") from None


@dataclass
class Session:
    """Who is on one connection and how far its authentication got."""

    listener: str
    protocol: str
    host: str  # the client's IP, as ACL hosts name it
    principal: str = ANONYMOUS
    authenticated: bool = True  # False until SASL completes on a SASL listener
    handshaken: bool = False
    mechanism: Mechanism | None = None
    close_after_response: bool = False


def new_mechanism(name: str, plain_users: dict[str, str], store: ScramStore) -> Mechanism:
    if name == "PLAIN":
        return PlainServer(plain_users)
    if name in SCRAM_MECHANISMS:
        return ScramMechanism(name, store)
    raise ValueError(name)
