"""Single-node answers to replica-management, ACL and broker-config admin calls, through the
admin clients people use (kafka-python's KafkaAdminClient, confluent-kafka's AdminClient)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CfTopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.admin import ConfigResource as CfConfigResource
from kafka import KafkaAdminClient
from kafka import errors as kerrors
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ConfigResource,
    ConfigResourceType,
    ResourcePattern,
)
from kafka.admin import ResourceType as KResourceType
from kafka.structs import TopicPartition, TopicPartitionReplica
from kio.index import load_request_schema

from streams.broker import handlers
from streams.broker.protocol import RequestContext, build_entity, request_is_flexible


def create_topic(broker: Any, name: str, partitions: int) -> None:
    broker.call(lambda: broker.broker.topics.create(name, partitions))


@pytest.fixture
def kadmin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="cluster-admin-test")
    try:
        yield client
    finally:
        client.close()


def test_describe_log_dirs_reports_our_data_dir_and_partition_sizes(broker: Any,
                                                                    kadmin: KafkaAdminClient) -> None:
    create_topic(broker, "sized", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(20):
        producer.produce("sized", value=b"x" * 100, key=b"%d" % i, partition=0)
    assert producer.flush(30) == 0

    [result] = kadmin.describe_log_dirs()
    assert result["broker"] == 0
    [log_dir] = result["log_dirs"]
    assert log_dir["error_code"] == 0
    assert log_dir["log_dir"] == os.path.abspath(broker.data_dir)
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    topics = {t["name"]: t["partitions"] for t in log_dir["topics"]}
    expected = broker.call(lambda: [p.size_bytes for p in broker.broker.topics.get("sized").partitions])
    assert expected[0] > 2000 and expected[1] == 0
    assert [p["partition_size"] for p in topics["sized"]] == expected
    assert all(p["offset_lag"] == 0 and p["is_future_key"] is False for p in topics["sized"])

    # A filtered request lists only the hosted partitions it asked for.
    [filtered] = kadmin.describe_log_dirs({"sized": [1], "missing": [0]})
    [only] = filtered["log_dirs"]
    assert only["topics"] == [{"name": "sized", "partitions": [
        {"partition_index": 1, "partition_size": 0, "offset_lag": 0, "is_future_key": False}]}]


def test_alter_replica_log_dirs_accepts_only_the_current_dir(broker: Any,
                                                             kadmin: KafkaAdminClient) -> None:
    create_topic(broker, "moved", 1)
    here = os.path.abspath(broker.data_dir)
    replica = TopicPartitionReplica("moved", 0, 0)
    assert kadmin.alter_replica_log_dirs({replica: here}) == {replica: kerrors.NoError}
    assert kadmin.alter_replica_log_dirs({replica: "/elsewhere"}) == {
        replica: kerrors.LogDirNotFoundError}
    ghost = TopicPartitionReplica("moved", 5, 0)
    assert kadmin.alter_replica_log_dirs({ghost: here}) == {
        ghost: kerrors.ReplicaNotAvailableError}


def test_elect_leaders_is_never_needed(broker: Any, kadmin: KafkaAdminClient) -> None:
    create_topic(broker, "led", 3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wanted = [CfTopicPartition("led", p) for p in range(3)] + [CfTopicPartition("nope", 0)]
    results = admin.elect_leaders(ElectionType.PREFERRED, wanted).result(30)
    codes = {(tp.topic, tp.partition): err.code() for tp, err in results.items()}
    assert codes == {("led", 0): KafkaError.ELECTION_NOT_NEEDED,
                     ("led", 1): KafkaError.ELECTION_NOT_NEEDED,
                     ("led", 2): KafkaError.ELECTION_NOT_NEEDED,
                     ("nope", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}

    response = kadmin.elect_leaders(1, {"led": [0, 9]}, raise_errors=False)  # unclean
    [(topic, partitions)] = [(r.topic, r.partition_result)
                             for r in response.replica_election_results]
    assert topic == "led"
    assert [(p.partition_id, p.error_code) for p in partitions] == [
        (0, kerrors.ElectionNotNeededError.errno), (9, kerrors.UnknownTopicOrPartitionError.errno)]


def test_partition_reassignments_on_one_node(broker: Any, kadmin: KafkaAdminClient) -> None:
    create_topic(broker, "placed", 2)
    p0, p1, ghost = (TopicPartition("placed", 0), TopicPartition("placed", 1),
                     TopicPartition("placed", 7))
    assert kadmin.alter_partition_reassignments({p0: [0], p1: [0, 1], ghost: [0]}) == {
        p0: None,
        p1: kerrors.InvalidReplicationAssignmentError,
        ghost: kerrors.UnknownTopicOrPartitionError,
    }
    assert kadmin.alter_partition_reassignments({p1: [0, 0]}) == {
        p1: kerrors.InvalidReplicationAssignmentError}
    assert kadmin.alter_partition_reassignments({p0: None}) == {
        p0: kerrors.NoReassignmentInProgressError}
    assert kadmin.list_partition_reassignments() == {}
    assert kadmin.list_partition_reassignments([p0, ghost]) == {}


BROKER_TYPES = {
    "listeners": "STRING", "advertised.listeners": "STRING", "broker.id": "INT",
    "node.id": "INT", "log.dirs": "LIST", "num.partitions": "INT",
    "auto.create.topics.enable": "BOOLEAN", "log.segment.bytes": "INT",
    "log.retention.ms": "LONG", "log.retention.bytes": "LONG", "message.max.bytes": "INT",
    "offsets.topic.num.partitions": "INT", "group.min.session.timeout.ms": "INT",
    "group.max.session.timeout.ms": "INT", "group.initial.rebalance.delay.ms": "INT",
    "transaction.max.timeout.ms": "INT",
}


def test_describe_broker_configs_uses_kafka_names(broker: Any, kadmin: KafkaAdminClient) -> None:
    configs = kadmin.describe_configs([ConfigResource(ConfigResourceType.BROKER, 0)],
                                      config_filter="all")["broker"]["0"]
    for name, config_type in BROKER_TYPES.items():
        assert configs[name]["config_type"] == config_type, name
        assert configs[name]["is_sensitive"] is False
    assert not any("_" in name for name in configs)  # no Python field names leak out
    assert configs["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{broker.port}"
    assert configs["listeners"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert configs["advertised.listeners"]["value"] is None  # Kafka's default: use listeners
    assert configs["advertised.listeners"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["log.dirs"]["value"] == os.path.abspath(broker.data_dir)
    assert configs["group.initial.rebalance.delay.ms"] == {  # the fixture sets it to 0
        "value": "0", "read_only": True, "config_source": "STATIC_BROKER_CONFIG",
        "is_sensitive": False, "synonyms": [], "config_type": "INT", "documentation": None}
    assert configs["num.partitions"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["log.retention.ms"]["read_only"] is False  # per-broker dynamic in Kafka
    assert configs["auto.create.topics.enable"]["value"] == "true"

    # configuration_keys filtering (librdkafka always asks for every key, kafka-python can ask).
    wanted = ConfigResource(ConfigResourceType.BROKER, 0,
                            configs={"log.retention.ms": None, "node.id": None})
    filtered = kadmin.describe_configs([wanted], config_filter="all")["broker"]["0"]
    assert sorted(filtered) == ["log.retention.ms", "node.id"]
    assert filtered["node.id"]["value"] == "0"

    # librdkafka reads the same names and flags.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [future] = admin.describe_configs([CfConfigResource(ResourceType.BROKER, "0")]).values()
    entries = future.result(30)
    assert entries["log.segment.bytes"].value == str(1 << 30)
    assert entries["log.segment.bytes"].is_read_only is False
    assert entries["broker.id"].is_read_only is True


def handle(broker: Any, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """Run our handler for a request on the broker's loop (for requests clients cannot route)."""
    request = build_entity(load_request_schema(api_key, version), body)
    ctx = RequestContext(api_key, version, 1, "test", request_is_flexible(api_key, version))
    spec = handlers.REGISTRY[api_key]
    future = asyncio.run_coroutine_threadsafe(spec.func(broker.broker, ctx, request), broker.loop)
    return future.result(30)


def test_describe_configs_answers_only_for_our_broker_id(broker: Any) -> None:
    def describe(name: str) -> dict[str, Any]:
        resource = {"resource_type": 4, "resource_name": name, "configuration_keys": None}
        body = {"resources": [resource], "include_synonyms": True,
                "include_documentation": False}
        [result] = handle(broker, 32, 4, body)["results"]
        return result

    ours = describe("0")
    assert ours["error_code"] == 0 and len(ours["configs"]) > 10
    retention = next(c for c in ours["configs"] if c["name"] == "log.retention.ms")
    assert retention["synonyms"] == [
        {"name": "log.retention.ms", "value": "604800000", "source": 5}]
    # cluster-wide dynamic defaults: Kafka 4.1+'s min.insync.replicas record (KIP-966), no other
    assert [(c["name"], c["config_source"]) for c in describe("")["configs"]] == [
        ("min.insync.replicas", 3)]
    other = describe("7")
    assert other["error_code"] == 42 and "expected 0" in other["error_message"]


def test_acl_requests_answer_security_disabled(broker: Any, kadmin: KafkaAdminClient) -> None:
    """No authorizer: every ACL call fails with SECURITY_DISABLED, as on Kafka without one."""
    pattern = ResourcePattern(KResourceType.TOPIC, "guarded")
    acl_filter = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                           permission_type=ACLPermissionType.ANY, resource_pattern=pattern)
    with pytest.raises(kerrors.SecurityDisabledError, match="No authorizer is configured"):
        kadmin.describe_acls(acl_filter)

    # librdkafka ignores DescribeAcls' top-level error, so create/delete go through it instead.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL, "User:x",
                         "*", AclOperation.READ, AclPermissionType.ALLOW)
    binding_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                      None, AclOperation.ANY, AclPermissionType.ANY)
    for futures in (admin.create_acls([binding]), admin.delete_acls([binding_filter])):
        [future] = futures.values()
        with pytest.raises(KafkaException) as info:
            future.result(30)
        error = info.value.args[0]
        assert error.code() == KafkaError.SECURITY_DISABLED
        assert "No authorizer is configured" in error.str()
