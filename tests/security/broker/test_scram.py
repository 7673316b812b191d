"""SCRAM-SHA-256/512: users made through AlterUserScramCredentials (confluent-kafka's admin
client, as kafka-configs.sh sends it), logins from three client libraries, refusals, and
credentials that survive a broker restart."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.reference.wire import Connection
from tests.security.broker.clients import CLIENTS
from tests.security.broker.conftest import SecuredBroker
from tests.security.certs import Pki

pytestmark = pytest.mark.compat

BOB, BOB_PW = "bob", "bob-scram-secret"


def _admin(broker: SecuredBroker):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})


def set_user(broker: SecuredBroker, user: str, password: str, mechanism: str,
             iterations: int = 4096) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    info = ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), iterations)
    admin = _admin(broker)  # kept alive until the answer is in
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())])
    for future in futures.values():
        future.result(15)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:
    running = SecuredBroker(tmp_path_factory.mktemp("scram-broker"), pki).start()
    try:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            set_user(running, BOB, BOB_PW, mechanism)
        yield running
    finally:
        running.stop()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_scram_roundtrip(broker: SecuredBroker, pki: Pki, client: str, mechanism: str) -> None:
    settings, roundtrip = CLIENTS[client]
    assert roundtrip(broker.address("SASL_SSL"),
                     settings("SASL_SSL", pki.truststore, mechanism, BOB, BOB_PW),
                     f"scram-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("user,password", [(BOB, "wrong-password"), ("nobody", BOB_PW)])
def test_scram_refuses_wrong_password_and_unknown_user(broker: SecuredBroker, user: str,
                                                       password: str) -> None:
    """Both get SASL_AUTHENTICATION_FAILED with the same text (user existence does not leak),
    at the client's final message or its first; then the connection closes."""
    import base64
    import hashlib
    import hmac

    with Connection(broker.address("SASL_PLAINTEXT"), timeout=10) as conn:
        conn.send(17, 1, {"mechanism": "SCRAM-SHA-256"})
        first_bare = f"n={user},r=clientnonce123"
        answer = conn.send(36, 2, {"auth_bytes": f"n,,{first_bare}".encode()})
        assert answer is not None
        if answer["error_code"] == "none":
            server_first = answer["auth_bytes"].decode()
            attrs = dict(part.split("=", 1) for part in server_first.split(","))
            salted = hashlib.pbkdf2_hmac("sha256", password.encode(),
                                         base64.b64decode(attrs["s"]), int(attrs["i"]))
            client_key = hmac.new(salted, b"Client Key", "sha256").digest()
            stored = hashlib.sha256(client_key).digest()
            final = f"c=biws,r={attrs['r']}"
            signature = hmac.new(stored, f"{first_bare},{server_first},{final}".encode(),
                                 "sha256").digest()
            proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature,
                                                                 strict=True))).decode()
            answer = conn.send(36, 2, {"auth_bytes": f"{final},p={proof}".encode()})
            assert answer is not None
        assert answer["error_code"] == "sasl_authentication_failed"
        assert answer["error_message"] == ("Authentication failed during authentication due "
                                           "to invalid credentials with SASL mechanism "
                                           "SCRAM-SHA-256")
        conn.sock.settimeout(10)
        assert conn.sock.recv(1) == b""


def test_describe_alter_errors_and_restart(tmp_path_factory: pytest.TempPathFactory,
                                           pki: Pki) -> None:
    """Describe lists mechanisms and iterations; Kafka's per-user errors; credentials are
    salted on disk (never the password) and survive a restart; deletion works."""
    from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion

    data = tmp_path_factory.mktemp("scram-restart")
    broker = SecuredBroker(data, pki).start()
    try:
        set_user(broker, "carol", "carol-pw-1", "SCRAM-SHA-512", iterations=8192)
        admin = _admin(broker)
        described = admin.describe_user_scram_credentials(["carol"])["carol"].result(15)
        infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
        assert infos == [(ScramMechanism.SCRAM_SHA_512, 8192)]
        with pytest.raises(Exception, match="does not exist"):
            admin.describe_user_scram_credentials(["nobody"])["nobody"].result(15)
        with pytest.raises(Exception, match="Too few iterations"):
            set_user(broker, "dave", "pw", "SCRAM-SHA-256", iterations=100)
        stored = (data / "scram-credentials.json").read_text()
        assert "carol-pw-1" not in stored and json.loads(stored)[0]["user"] == "carol"
        broker.restart()
        settings, roundtrip = CLIENTS["aiokafka"]
        assert roundtrip(broker.address("SASL_SSL"),
                         settings("SASL_SSL", pki.truststore, "SCRAM-SHA-512", "carol",
                                  "carol-pw-1"), "after-restart")
        admin = _admin(broker)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])
        for future in futures.values():
            future.result(15)
        assert admin.describe_user_scram_credentials().result(15) == {}
    finally:
        broker.stop()
