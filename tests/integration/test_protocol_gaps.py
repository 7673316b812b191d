"""Answers the external client suites expect from Apache Kafka 3.x/4.x."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from confluent_kafka.error import KafkaException
from helpers import EmbeddedBroker
from kio.index import load_response_schema
from kio.serial import entity_reader
from test_bad_input import encode_request

from streams.broker.handlers import supported_versions
from streams.broker.records import Record, build_batch, validate_produced

INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
GROUP_SUBSCRIBED_TO_TOPIC = 86


def admin(broker: EmbeddedBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def call(broker: EmbeddedBroker, key: int, version: int, body: dict):
    """One request on a raw connection; the kio response entity (non-flexible versions)."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=20) as sock:
        sock.sendall(encode_request(key, version, 99, body))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
    assert struct.unpack_from(">i", data, 4)[0] == 99
    entity, _ = entity_reader(load_response_schema(key, version))(data[8:], 0)
    return entity


def test_create_topics_with_a_replica_assignment_on_this_node(broker) -> None:
    client = admin(broker)
    futures = client.create_topics([NewTopic("assigned", 2, replica_assignment=[[0], [0]])])
    futures["assigned"].result(15)
    assert len(broker.broker.topics.topics["assigned"].partitions) == 2
    futures = client.create_topics([NewTopic("elsewhere", 1, replica_assignment=[[0, 1]])])
    with pytest.raises(KafkaException) as err:
        futures["elsewhere"].result(15)
    assert err.value.args[0].code() == INVALID_REPLICA_ASSIGNMENT
    assert "broker 1" in err.value.args[0].str()
    assert "elsewhere" not in broker.broker.topics.topics


def _describe_broker(broker: EmbeddedBroker, name: str) -> ConfigEntry:
    resource, client = ConfigResource(ResourceType.BROKER, "0"), admin(broker)
    return client.describe_configs([resource])[resource].result(15)[name]


def test_dynamic_broker_configs_are_altered_and_read_only_ones_refused(broker) -> None:
    client = admin(broker)
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "1234", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(15)
    assert broker.broker.config.log_retention_ms == 1234
    entry = _describe_broker(broker, "log.retention.ms")
    assert entry.value == "1234" and entry.source == 2  # DYNAMIC_BROKER_CONFIG

    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("num.partitions", "7", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as err:
        client.incremental_alter_configs([resource])[resource].result(15)
    assert err.value.args[0].code() == INVALID_REQUEST
    assert "Cannot update these configs dynamically" in err.value.args[0].str()
    assert broker.broker.config.num_partitions == 1

    # The legacy AlterConfigs too; deleting goes back to the static value.
    resource = ConfigResource(ResourceType.BROKER, "0", set_config={"log.cleaner.backoff.ms": "500"})
    client.alter_configs([resource])[resource].result(15)
    assert broker.broker.config.log_cleaner_backoff_ms == 500
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    client.incremental_alter_configs([resource])[resource].result(15)
    assert broker.broker.config.log_retention_ms == 7 * 24 * 3600 * 1000


def test_authorized_operations_without_an_authorizer_are_all_supported(broker) -> None:
    client = admin(broker)
    client.create_topics([NewTopic("ops", 1)])["ops"].result(15)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ops-group"})
    consumer.commit(offsets=[TopicPartition("ops", 0, 1)], asynchronous=False)
    consumer.close()
    topic = client.describe_topics(
        TopicCollection(["ops"]),
        include_authorized_operations=True)["ops"].result(15)
    assert set(topic.authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS}
    cluster = client.describe_cluster(include_authorized_operations=True).result(15)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
        AclOperation.DESCRIBE}
    group = client.describe_consumer_groups(
        ["ops-group"], include_authorized_operations=True)["ops-group"].result(15)
    assert set(group.authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}


def _offset_delete(broker: EmbeddedBroker, group: str, topic: str, partitions: list[int]):
    return call(broker, 47, 0, {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": p} for p in partitions]}]})


def test_offset_delete(tmp_path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        assert supported_versions()[47] == (0, 0)  # advertised in ApiVersions
        client = admin(broker)
        client.create_topics([NewTopic("od", 2)])["od"].result(15)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
        consumer.commit(offsets=[TopicPartition("od", 0, 5), TopicPartition("od", 1, 6)],
                        asynchronous=False)
        consumer.close()
        response = _offset_delete(broker, "g", "od", [0])
        assert response.error_code.value == 0
        assert [(p.partition_index, p.error_code.value)
                for t in response.topics for p in t.partitions] == [(0, 0)]
        assert _offset_delete(broker, "nobody", "od", [0]).error_code.value == GROUP_ID_NOT_FOUND

        broker.restart()  # tombstones in __consumer_offsets: the deleted offset stays deleted
        committed = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
        try:
            got = committed.committed([TopicPartition("od", 0), TopicPartition("od", 1)], 15)
            assert [tp.offset for tp in got] == [-1001, 6]
            # An active consumer group subscribed to the topic keeps its offsets.
            committed.subscribe(["od"])
            deadline = time.monotonic() + 30
            while not committed.assignment() and time.monotonic() < deadline:
                committed.poll(0.2)
            assert committed.assignment()
            response = _offset_delete(broker, "g", "od", [1])
            assert [p.error_code.value for t in response.topics for p in t.partitions] == [
                GROUP_SUBSCRIBED_TO_TOPIC]
        finally:
            committed.close()
    finally:
        broker.stop()


def test_list_offsets_max_timestamp_names_the_record(broker) -> None:
    client = admin(broker)
    client.create_topics([NewTopic("ts", 1)])["ts"].result(15)

    def append() -> None:
        batch = build_batch([Record(b"a", b"1", 100), Record(b"b", b"2", 300),
                             Record(b"c", b"3", 200)])
        broker.broker.topics.partition("ts", 0).append(bytearray(batch),
                                                       validate_produced(batch))

    broker.call(append)
    tp = TopicPartition("ts", 0)
    result = client.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(15)
    assert (result.offset, result.timestamp) == (1, 300)


def test_incremental_alter_configs_may_empty_a_list_and_accepts_message_format_version(
        broker) -> None:
    client = admin(broker)
    client.create_topics([NewTopic("lists", 1)])["lists"].result(15)
    resource = ConfigResource(ResourceType.TOPIC, "lists", incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
        ConfigEntry("message.format.version", "0.10.0",
                    incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(15)
    topic = broker.broker.topics.topics["lists"]
    assert topic.configs["cleanup.policy"] == ""
    assert topic.configs["message.format.version"] == "0.10.0"
