"""The ``streams`` Spark source's broker I/O over SASL_SSL, driven as Spark drives it: options
parsed on the driver (kafka.security.protocol, kafka.sasl.*, kafka.ssl.*), offsets planned by the
driver's OffsetClient, the settings pickled into a task that reads its range. (No SparkSession:
tests/spark covers the Spark plumbing; this covers the security options end to end.)"""

from __future__ import annotations

import pickle

import pytest
from runtime.kafka_io import create_topics, produce

from streams.spark.kafka_read import OffsetClient, Range, read_range
from streams.spark.source_offsets import SourceOptionError, parse_options

from .conftest import PASSWORDS, SecureKafka, create_acls


def spark_options(kafka: SecureKafka, user: str, **extra: str) -> dict[str, str]:
    """What a user passes to spark.read.format("streams"), lower-cased as Spark hands it over."""
    options = {"kafka.bootstrap.servers": kafka.sasl_ssl, "subscribe": "spark-secure"}
    options.update({f"kafka.{k}": v for k, v in kafka.client_props(user, "PLAIN").items()})
    options.update(extra)
    return {k.lower(): v for k, v in options.items()}


def test_source_reads_over_sasl_ssl_as_a_reader(secure_kafka: SecureKafka) -> None:
    create_topics(secure_kafka.plaintext, {"spark-secure": 2})
    produce(secure_kafka.plaintext, "spark-secure",
            [(f"k{i}".encode(), f"v{i}".encode(), 1000 + i) for i in range(10)])
    create_acls(secure_kafka.plaintext, [
        ("TOPIC", "spark-secure", "LITERAL", "User:app", "READ")])
    options = parse_options(spark_options(secure_kafka, "app"), mode="batch")
    assert PASSWORDS["app"] not in repr(options)
    with OffsetClient(options.client) as client:
        assert client.cluster()["spark-secure"] == [0, 1]
        latest = client.latest([("spark-secure", 0), ("spark-secure", 1)])
    assert sum(latest.values()) == 10
    values = []
    for (topic, partition), end in latest.items():
        task_settings = pickle.loads(pickle.dumps(options.client))  # as Spark ships it
        for batch in read_range(Range(topic, partition, 0, end, task_settings)):
            values.extend(batch.column("value").to_pylist())
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(10))


def test_security_options_are_checked_at_load(secure_kafka: SecureKafka, tmp_path) -> None:
    with pytest.raises(SourceOptionError, match="did you mean 'ssl.truststore.location'"):
        parse_options(spark_options(secure_kafka, "app", **{
            "kafka.ssl.truststore.locaton": "/x"}), mode="batch")
    with pytest.raises(SourceOptionError) as err:
        parse_options(spark_options(secure_kafka, "app", **{
            "kafka.sasl.jaas.config": f'Broken required password="{PASSWORDS["app"]}";'}),
            mode="batch")
    assert "sasl.jaas.config" in str(err.value) and PASSWORDS["app"] not in str(err.value)
    options = parse_options(spark_options(secure_kafka, "app", **{
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                  'required username="app" password="wrong";'}), mode="batch")
    with OffsetClient(options.client) as client, pytest.raises(Exception) as failure:
        client.cluster()
    assert "wrong" not in str(failure.value)

