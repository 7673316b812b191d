"""Listeners, TLS and SASL/PLAIN on our broker, through confluent-kafka, aiokafka and
kafka-python, plus the wrong clients: bad credentials, skipped handshake, garbage tokens."""

from __future__ import annotations

import logging
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.broker import BrokerConfig
from streams.broker.security import BrokerSecurity, ListenerError
from tests.reference.wire import Connection
from tests.security.broker.clients import CLIENTS
from tests.security.broker.conftest import ADMIN, ALICE, ALICE_PW, SecuredBroker
from tests.security.certs import Pki, make_pki

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:
    running = SecuredBroker(tmp_path_factory.mktemp("sasl-broker"), pki).start()
    try:
        yield running
    finally:
        running.stop()


def _topic() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def test_every_listener_advertises_itself(broker: SecuredBroker, pki: Pki) -> None:
    """Metadata on each listener names that listener's port (Kafka answers with the
    advertised endpoint of the listener the request came in on)."""
    from confluent_kafka.admin import AdminClient

    settings = {
        "PLAINTEXT": {},
        "SSL": {"security.protocol": "SSL", "ssl.ca.location": str(pki.truststore)},
        "SASL_PLAINTEXT": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                           "sasl.username": ALICE, "sasl.password": ALICE_PW},
    }
    for listener, extra in settings.items():
        admin = AdminClient({"bootstrap.servers": broker.address(listener), **extra})
        brokers = admin.list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == \
            [("127.0.0.1", broker.ports[listener])], listener


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_tls_roundtrip(broker: SecuredBroker, pki: Pki, client: str) -> None:
    settings, roundtrip = CLIENTS[client]
    assert roundtrip(broker.address("SSL"), settings("SSL", pki.truststore), _topic())


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_sasl_ssl_plain_roundtrip(broker: SecuredBroker, pki: Pki, client: str) -> None:
    settings, roundtrip = CLIENTS[client]
    assert roundtrip(broker.address("SASL_SSL"),
                     settings("SASL_SSL", pki.truststore, "PLAIN", ALICE, ALICE_PW), _topic())


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("user,password", [(ALICE, "not-her-password"),
                                           ("mallory", "mallory-guess")])
def test_plain_refuses_bad_credentials(broker: SecuredBroker, pki: Pki, client: str,
                                       user: str, password: str,
                                       caplog: pytest.LogCaptureFixture) -> None:
    settings, roundtrip = CLIENTS[client]
    caplog.set_level(logging.INFO, "streams.broker.security")
    config = settings("SASL_SSL", pki.truststore, "PLAIN", user, password)
    if client == "confluent":
        config["message.timeout.ms"] = 3000  # librdkafka retries until then
    elif client == "kafka-python":
        config["bootstrap_timeout_ms"] = 3000  # it retries bootstrapping until then
    with pytest.raises(Exception) as info:
        roundtrip(broker.address("SASL_SSL"), config, _topic())
    assert password not in str(info.value)
    refusals = [r.getMessage() for r in caplog.records if "Failed authentication" in
                r.getMessage()]
    assert refusals and all("Invalid username or password" in r for r in refusals)
    assert not any(password in r.getMessage() for r in caplog.records)


def _raw(broker: SecuredBroker) -> Connection:
    return Connection(broker.address("SASL_PLAINTEXT"), timeout=10)


def _closed(conn: Connection) -> bool:
    conn.sock.settimeout(10)
    try:
        return conn.sock.recv(1) == b""
    except (TimeoutError, ConnectionError):
        return False


def test_request_before_handshake_closes_the_connection(broker: SecuredBroker) -> None:
    with _raw(broker) as conn:
        versions = conn.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert versions is not None and versions["error_code"] == "none"
        conn.send(3, 12, {"topics": None}, expect_response=False)
        assert _closed(conn)
    with _raw(broker) as conn:  # SaslAuthenticate without SaslHandshake
        conn.send(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}, expect_response=False)
        assert _closed(conn)
    assert _metadata_after_plain(broker)  # the broker still serves


def test_garbage_authenticate_gets_error_58_and_close(broker: SecuredBroker) -> None:
    with _raw(broker) as conn:
        handshake = conn.send(17, 1, {"mechanism": "PLAIN"})
        assert handshake == {"error_code": "none", "mechanisms":
                             ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
        answer = conn.send(36, 2, {"auth_bytes": b"\xff\xfe garbage without separators"})
        assert answer is not None
        assert answer["error_code"] == "sasl_authentication_failed"
        assert answer["error_message"] == \
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        assert _closed(conn)
    with _raw(broker) as conn:
        conn.send(17, 1, {"mechanism": "SCRAM-SHA-256"})
        answer = conn.send(36, 2, {"auth_bytes": b"\x00\x01\x02 not scram"})
        assert answer is not None and answer["error_code"] == "sasl_authentication_failed"
        assert _closed(conn)
    with _raw(broker) as conn:
        answer = conn.send(17, 1, {"mechanism": "GSSAPI"})
        assert answer == {"error_code": "unsupported_sasl_mechanism",
                          "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
        assert _closed(conn)
    with _raw(broker) as conn:  # after the handshake only SaslAuthenticate may come
        conn.send(17, 1, {"mechanism": "PLAIN"})
        refused = conn.send(3, 12, {"topics": None})  # an empty error answer, as Kafka's
        assert refused is not None and refused["brokers"] == refused["topics"] == []
        assert _closed(conn)
    with _raw(broker) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        refused = conn.send(32, 4, {"resources": [], "include_synonyms": False,
                                    "include_documentation": False})
        assert refused is not None and refused["results"] == []
        assert _closed(conn)
    assert _metadata_after_plain(broker)


def _metadata_after_plain(broker: SecuredBroker) -> bool:
    with _raw(broker) as conn:
        conn.send(17, 1, {"mechanism": "PLAIN"})
        answer = conn.send(36, 2, {"auth_bytes": f"\0{ALICE}\0{ALICE_PW}".encode()})
        assert answer is not None and answer["error_code"] == "none", answer
        metadata = conn.send(3, 12, {"topics": None})
        assert metadata is not None
        again = conn.send(17, 1, {"mechanism": "PLAIN"})  # already authenticated
        assert again is not None and again["error_code"] == "illegal_sasl_state"
        return bool(metadata["brokers"])


def test_big_request_before_authentication_closes(broker: SecuredBroker) -> None:
    """sasl.server.max.receive.size (512 KiB): a stranger cannot make the broker wait for, and
    buffer, a 100 MB request."""
    with _raw(broker) as conn:
        conn.sock.sendall((10 << 20).to_bytes(4, "big") + b"\0" * 1024)
        assert _closed(conn)
    assert _metadata_after_plain(broker)


def test_plaintext_listener_answers_sasl_with_illegal_state(broker: SecuredBroker) -> None:
    with Connection(broker.address("PLAINTEXT"), timeout=10) as conn:
        answer = conn.send(17, 1, {"mechanism": "PLAIN"})
        assert answer is not None and answer["error_code"] == "illegal_sasl_state"


def test_listener_settings_are_checked(tmp_path: Path, pki: Pki) -> None:
    def security(**values: object) -> BrokerSecurity:
        return BrokerSecurity(BrokerConfig.from_mapping({"data_dir": tmp_path, **values}))

    with pytest.raises(ListenerError, match="listener.security.protocol.map"):
        security(listeners="INTERNAL://127.0.0.1:0")
    internal = security(listeners="INTERNAL://127.0.0.1:0,EXTERNAL://:0",
                        advertised_listeners="EXTERNAL://kafka.example.com:9094",
                        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT")
    assert [(lst.name, lst.protocol, lst.advertised_host) for lst in internal.listeners] == \
        [("INTERNAL", "PLAINTEXT", "127.0.0.1"), ("EXTERNAL", "PLAINTEXT", "kafka.example.com")]
    per_listener = security(listeners="SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
                            sasl_enabled_mechanisms="PLAIN", ssl_keystore_type="PEM",
                            ssl_keystore_location=str(pki.server.keystore),
                            **{"listener.name.SASL_SSL.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                               "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                                   'PlainLoginModule required user_a="b";'})
    assert per_listener.mechanisms == {"SASL_PLAINTEXT": ("PLAIN",),
                                       "SASL_SSL": ("SCRAM-SHA-512",)}
    kraft = security(listeners="PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                     controller_listener_names="CONTROLLER")  # a KRaft server.properties
    assert [lst.name for lst in kraft.listeners] == ["PLAINTEXT"]
    with pytest.raises(ListenerError, match="appears more than once"):
        security(listeners="PLAINTEXT://:1,PLAINTEXT://:2")
    with pytest.raises(ListenerError, match="ssl.keystore.location"):
        security(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM")
    with pytest.raises(ListenerError, match="PEM"):
        security(listeners="SSL://127.0.0.1:0", ssl_keystore_location=str(pki.server.keystore))
    with pytest.raises(ListenerError, match="plain.sasl.jaas.config"):
        security(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_enabled_mechanisms="PLAIN")
    with pytest.raises(ListenerError, match="GSSAPI"):
        security(listeners="SASL_PLAINTEXT://127.0.0.1:0")
    secret = "do-not-print-me"
    with pytest.raises(ListenerError) as info:
        security(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_enabled_mechanisms="PLAIN",
                 **{"listener.name.sasl_plaintext.plain.sasl.jaas.config":
                    f'PlainLoginModule required user_{ADMIN}="{secret}"'})  # no ';'
    assert secret not in str(info.value)
    inline = security(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM",
                      ssl_keystore_key=pki.server.key_pem.replace("\n", " "),
                      ssl_keystore_certificate_chain=pki.server.chain_pem)
    assert "SSL" in inline.contexts
    with pytest.raises(ListenerError, match="OpenSSL names"):
        security(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM",
                 ssl_keystore_location=str(pki.server.keystore),
                 ssl_cipher_suites="TLS_NOT_A_SUITE")
    locked = make_pki(tmp_path / "locked", key_password="key-secret")
    mutual = security(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM",
                      ssl_keystore_location=str(locked.server.keystore),
                      ssl_key_password="key-secret", ssl_truststore_type="PEM",
                      ssl_truststore_certificates=locked.ca_pem, ssl_client_auth="required")
    assert mutual.contexts["SSL"].verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ListenerError) as wrong:
        security(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM",
                 ssl_keystore_location=str(locked.server.keystore),
                 ssl_key_password="not-the-key-secret")
    assert "not-the-key-secret" not in str(wrong.value)
