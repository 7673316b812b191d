"""A KafkaStreams app under exactly_once_v2 on a SASL_SSL cluster, as a restricted principal
holding only the ACLs docs/security.md lists, and no password in any log line."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from runtime.kafka_io import create_topics, latest_by_key, produce, read_all

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder
from streams.runtime import State, StreamsConfig

from .conftest import PASSWORDS, SecureKafka, create_acls

LINES = ["hello kafka streams", "kafka python", "hello again kafka", "streams streams"]
EXPECTED = {"hello": 2, "kafka": 3, "streams": 3, "python": 1, "again": 1}


def word_count(source: str, sink: str):
    builder = StreamsBuilder()
    lines = builder.stream(source, key_serde=Serdes.string(), value_serde=Serdes.string())
    (lines.flat_map_values(lambda line: line.lower().split())
        .group_by(lambda key, word: word)
        .count(Materialized("counts"))
        .to_stream()
        .to(sink, key_serde=Serdes.string(), value_serde=Serdes.long()))
    return builder.build()


def app_acls(app_id: str, source: str, sink: str) -> list[tuple[str, str, str, str, str]]:
    """Exactly the list in docs/security.md ("ACLs a Streams application needs")."""
    p = "User:app"
    return [
        ("TOPIC", source, "LITERAL", p, "READ"),
        ("TOPIC", sink, "LITERAL", p, "WRITE"),
        ("TOPIC", app_id, "PREFIXED", p, "ALL"),  # internal changelog/repartition topics
        ("GROUP", app_id, "LITERAL", p, "READ"),
        ("TRANSACTIONAL_ID", app_id, "PREFIXED", p, "WRITE"),
    ]


def test_eos_app_as_a_restricted_principal_over_sasl_ssl(
        secure_kafka: SecureKafka, tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    app_id, source, sink = "secure-wc", "secure-text", "secure-counts"
    create_topics(secure_kafka.plaintext, {source: 2, sink: 1})
    create_acls(secure_kafka.plaintext, app_acls(app_id, source, sink))
    produce(secure_kafka.plaintext, source,
            [(f"k{i}".encode(), line.encode(), 1000 + i) for i, line in enumerate(LINES)])
    config = {"application.id": app_id, "bootstrap.servers": secure_kafka.sasl_ssl,
              "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 100,
              "statestore.cache.max.bytes": 0, "state.dir": str(tmp_path / "state"),
              **secure_kafka.client_props("app", "SCRAM-SHA-512")}
    caplog.set_level(logging.DEBUG)
    streams = KafkaStreams(word_count(source, sink), config)
    streams.start()
    try:
        assert streams.wait_for_state(State.RUNNING, timeout=60), streams.error
        records = read_all(secure_kafka.plaintext, sink,
                           until=lambda rs: latest_by_key(rs) == EXPECTED)
        assert latest_by_key(records) == EXPECTED
        assert len(records) == sum(EXPECTED.values())  # exactly once: no duplicate update
        assert streams.state is State.RUNNING
    finally:
        assert streams.close(timeout=30)
    logged = "\n".join(r.getMessage() + str(r.args) for r in caplog.records)
    assert caplog.records, "DEBUG logging captured nothing"
    assert PASSWORDS["app"] not in logged
    assert PASSWORDS["app"] not in repr(StreamsConfig.from_mapping(config))


def test_the_app_is_refused_without_its_acls(secure_kafka: SecureKafka, tmp_path) -> None:
    """The same app with no transactional-id ACL: the restricted principal cannot run EOS."""
    app_id, source, sink = "denied-wc", "denied-text", "denied-counts"
    create_topics(secure_kafka.plaintext, {source: 1, sink: 1})
    create_acls(secure_kafka.plaintext,
                [a for a in app_acls(app_id, source, sink) if a[0] != "TRANSACTIONAL_ID"])
    config = {"application.id": app_id, "bootstrap.servers": secure_kafka.sasl_ssl,
              "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
              **secure_kafka.client_props("app", "SCRAM-SHA-256")}
    streams = KafkaStreams(word_count(source, sink), config)
    streams.start()
    try:
        assert streams.wait_for_state(State.ERROR, timeout=60)
        assert "ransactional" in repr(streams.error)
    finally:
        streams.close(timeout=30)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_and_a_wrong_password(secure_kafka: SecureKafka, mechanism: str) -> None:
    """The admin client the runtime builds authenticates with each mechanism; a wrong password
    is refused by the broker."""
    async def describe(password: str | None) -> dict:
        config = StreamsConfig.from_mapping({
            "application.id": "probe", "bootstrap.servers": secure_kafka.sasl_ssl,
            "request.timeout.ms": 10_000,
            **secure_kafka.client_props("admin", mechanism, password)})
        client = AIOKafkaAdminClient(**config.client_kwargs("admin"))
        await client.start()
        try:
            return await client.describe_cluster()
        finally:
            await client.close()

    assert asyncio.run(describe(None))["brokers"]
    with pytest.raises(KafkaError):
        asyncio.run(describe("not-the-password"))


def test_a_wrong_password_ends_the_app_in_error(secure_kafka: SecureKafka, tmp_path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """The app does not spin on a refused login: it ends in ERROR, saying why."""
    config = {"application.id": "wrong-pw", "bootstrap.servers": secure_kafka.sasl_ssl,
              "state.dir": str(tmp_path / "state"),
              **secure_kafka.client_props("app", "SCRAM-SHA-256", "not-the-password")}
    streams = KafkaStreams(word_count("wrong-in", "wrong-out"), config)
    streams.start()
    try:
        assert streams.wait_for_state(State.ERROR, timeout=60)
    finally:
        streams.close(timeout=30)
    assert "Authentication failed" in str(streams.error)  # the broker's reason
    assert "not-the-password" not in str(streams.error)
    assert not any("not-the-password" in r.getMessage() for r in caplog.records)
