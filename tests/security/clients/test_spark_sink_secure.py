"""The ``streams`` Spark sink over SASL_SSL, driven as Spark drives it: options parsed on the
driver (kafka.security.protocol, kafka.sasl.*, kafka.ssl.*), the writer pickled into tasks that
send their rows in open transactions, the driver committing them with EndTxn, all as a
principal holding only the ACLs a writer needs. (No SparkSession: tests/spark covers the Spark
plumbing; this covers the security options end to end, on Apache Kafka and on our broker.)"""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from runtime.kafka_io import create_topics

from streams.spark.sink import StreamsStreamWriter
from streams.spark.sink_options import SinkOptionError, parse_sink_options

from .conftest import PASSWORDS, SecureKafka, create_acls


def sink_options(kafka: SecureKafka, user: str, checkpoint: str, **extra: str) -> dict[str, str]:
    """What a user passes to df.writeStream.format("streams"), lower-cased as Spark hands it."""
    options = {"kafka.bootstrap.servers": kafka.sasl_ssl, "topic": "spark-sink-secure",
               "processing.guarantee": "exactly_once_v2", "checkpointLocation": checkpoint}
    options.update({f"kafka.{k}": v for k, v in kafka.client_props(user, "PLAIN").items()})
    options.update(extra)
    return {k.lower(): v for k, v in options.items()}


def committed_values(kafka: SecureKafka, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as CTopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.plaintext, "group.id": "sink-secure-check",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([CTopicPartition(topic, p, 0) for p in range(2)])
        values: list[bytes] = []
        ended: set[int] = set()
        while len(ended) < 2:
            message = consumer.poll(10)
            assert message is not None, f"no end of {topic} within 10 s"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                ended.add(message.partition())
            else:
                ended.discard(message.partition())
                values.append(message.value())
        return sorted(values)
    finally:
        consumer.close()


def test_exactly_once_sink_writes_over_sasl_ssl(secure_kafka: SecureKafka, tmp_path) -> None:
    create_topics(secure_kafka.plaintext, {"spark-sink-secure": 2})
    create_acls(secure_kafka.plaintext, [
        ("TOPIC", "spark-sink-secure", "LITERAL", "User:app", "WRITE"),
        ("TRANSACTIONAL_ID", "streams-spark-", "PREFIXED", "User:app", "WRITE")])
    options = parse_sink_options(sink_options(secure_kafka, "app", str(tmp_path / "ck")))
    assert PASSWORDS["app"] not in repr(options)
    writer = pickle.loads(pickle.dumps(StreamsStreamWriter(options)))  # as Spark ships it
    messages = [writer.write_task(iter([pa.record_batch(
        [pa.array([f"p{p}-{i}" for i in range(5)], pa.string())], names=["value"])]),
        p, "secure-query", 0) for p in range(2)]
    assert committed_values(secure_kafka, "spark-sink-secure") == []  # open until the commit
    StreamsStreamWriter(options).commit(messages, 0)
    assert committed_values(secure_kafka, "spark-sink-secure") == \
        sorted(f"p{p}-{i}".encode() for p in range(2) for i in range(5))


def test_sink_security_options_are_checked_at_start(secure_kafka: SecureKafka, tmp_path) -> None:
    with pytest.raises(SinkOptionError, match="did you mean 'ssl.truststore.location'"):
        parse_sink_options(sink_options(secure_kafka, "app", str(tmp_path), **{
            "kafka.ssl.truststore.locaton": "/x"}))
    with pytest.raises(SinkOptionError) as err:
        parse_sink_options(sink_options(secure_kafka, "app", str(tmp_path), **{
            "kafka.sasl.jaas.config": f'Broken required password="{PASSWORDS["app"]}";'}))
    assert "sasl.jaas.config" in str(err.value) and PASSWORDS["app"] not in str(err.value)
