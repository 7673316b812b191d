"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as Kafka implements it, and the credential store.

Kafka's ScramSaslServer: only gs2 header `n` (no channel binding), no SASLprep, names escaped as
`=3D`/`=2C`, iterations 4096..16384, the server nonce appended to the client's, the server-final
message `v=<signature>`. Credentials are kept as Kafka keeps them (UserScramCredentialRecord):
salt, StoredKey, ServerKey, iterations -- never the password. AlterUserScramCredentials sends the
salted password; the broker derives the keys (KIP-554).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
BY_CODE = {code: name for name, (code, _) in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
STORE_FILE = "scram-credentials.json"


class ScramError(Exception):
    """The exchange failed; the message is for the broker log, never the client."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salted: bytes, salt: bytes,
                             iterations: int) -> ScramCredential:
        digest = MECHANISMS[mechanism][1]
        client_key = hmac.new(salted, b"Client Key", digest).digest()
        server_key = hmac.new(salted, b"Server Key", digest).digest()
        return cls(salt, hashlib.new(digest, client_key).digest(), server_key, iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        salt = salt or secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode(), salt,
                                     iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)


class ScramStore:
    """Credentials per (user, mechanism), persisted in the data directory (write, fsync,
    rename) so that users survive a restart."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / STORE_FILE
        self.credentials: dict[tuple[str, str], ScramCredential] = {}

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"cannot read SCRAM credentials {self.path}: {exc}") from exc
        for entry in entries:
            self.credentials[(entry["user"], entry["mechanism"])] = ScramCredential(
                base64.b64decode(entry["salt"]), base64.b64decode(entry["stored_key"]),
                base64.b64decode(entry["server_key"]), int(entry["iterations"]))

    def save(self) -> None:
        entries = [{"user": user, "mechanism": mech,
                    "salt": base64.b64encode(c.salt).decode(),
                    "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(),
                    "iterations": c.iterations}
                   for (user, mech), c in sorted(self.credentials.items())]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump(entries, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def users(self) -> dict[str, list[tuple[str, int]]]:
        result: dict[str, list[tuple[str, int]]] = {}
        for (user, mech), cred in sorted(self.credentials.items()):
            result.setdefault(user, []).append((mech, cred.iterations))
        return result


def _attrs(message: str) -> dict[str, str]:
    result = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"invalid SCRAM attribute {part[:10]!r}")
        result[part[0]] = part[2:]
    return result


def _unescape(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("invalid escape in SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One server side of a SCRAM exchange: two client messages, two answers."""

    def __init__(self, mechanism: str, store: ScramStore) -> None:
        self.mechanism = mechanism
        self.digest = MECHANISMS[mechanism][1]
        self.store = store
        self.step = 0
        self.user = ""
        self.credential: ScramCredential | None = None
        self.complete = False

    def evaluate(self, data: bytes) -> bytes:
        if self.step == 0:
            self.step = 1
            return self._first(data)
        if self.step == 1:
            self.step = 2
            return self._final(data)
        raise ScramError("unexpected SCRAM message after the exchange completed")

    def _first(self, data: bytes) -> bytes:
        text = data.decode("utf-8")
        if not text.startswith(("n,", "y,")):
            raise ScramError("only gs2 header 'n' (no channel binding) is supported")
        _cb, authzid, bare = text.split(",", 2)
        attrs = _attrs(bare)
        if "n" not in attrs or "r" not in attrs:
            raise ScramError("client-first message without n= or r=")
        self.user = _unescape(attrs["n"])
        if authzid and _unescape(authzid[2:]) != self.user:
            raise ScramError("authorization id differs from the user name")
        if attrs.get("ext", "") and "tokenauth" in attrs.get("ext", ""):
            raise ScramError("delegation tokens are not supported")
        self.credential = self.store.get(self.user, self.mechanism)
        if self.credential is None:
            raise ScramError(f"unknown user {self.user!r} for {self.mechanism}")
        if self.credential.iterations < MIN_ITERATIONS:
            raise ScramError("stored credential has too few iterations")
        self.client_first_bare = bare
        self.nonce = attrs["r"] + _server_nonce()
        self.server_first = (f"r={self.nonce},s={base64.b64encode(self.credential.salt).decode()}"
                             f",i={self.credential.iterations}")
        return self.server_first.encode()

    def _final(self, data: bytes) -> bytes:
        assert self.credential is not None
        text = data.decode("utf-8")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final message without a proof")
        attrs = _attrs(without_proof)
        if attrs.get("r") != self.nonce:
            raise ScramError("nonce mismatch")
        # c= repeats the gs2 header: base64("n,,") = "biws", or "n,a=<authzid>,".
        if base64.b64decode(attrs.get("c", "")).split(b",")[0] != b"n":
            raise ScramError("channel binding is not supported")
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        signature = hmac.new(self.credential.stored_key, auth_message, self.digest).digest()
        proof = base64.b64decode(proof_b64, validate=True)
        if len(proof) != len(signature):
            raise ScramError("proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(),
                                   self.credential.stored_key):
            raise ScramError(f"invalid proof for user {self.user!r}")
        server_signature = hmac.new(self.credential.server_key, auth_message,
                                    self.digest).digest()
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


def _server_nonce() -> str:
    """Kafka's ScramFormatter.secureRandomString: a random 130-bit integer in base 36."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
    return out or "0"
