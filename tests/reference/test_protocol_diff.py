"""Differential protocol tests: the same raw requests to our broker and to Apache Kafka.

Each test runs one scripted session on both brokers (``pair.check``) and asserts the normalised
answers are equal field by field. Where a difference is deliberate it is masked here explicitly,
naming the section of docs/kafka-differences.md that explains it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from streams.broker.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    Record,
    build_batch,
    build_control_batch,
)

from .compare import Pair, Side, assert_same
from .steps import (
    METADATA,
    batch,
    create_topic,
    create_topics,
    find_coordinator,
    partition_answer,
    produce,
    topic_spec,
)
from .wire import api_versions

# docs/kafka-differences.md "APIs we do not implement": Kafka 4.4 advertises these, we do not.
NOT_IMPLEMENTED = {
    23: "OffsetForLeaderEpoch",
    27: "WriteTxnMarkers", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 48: "DescribeClientQuotas",
    49: "AlterClientQuotas", 55: "DescribeQuorum", 57: "UpdateFeatures",
    61: "DescribeProducers", 64: "UnregisterBroker", 65: "DescribeTransactions",
    66: "ListTransactions",
    74: "ListConfigResources", 75: "DescribeTopicPartitions",
    80: "AddRaftVoter",
    81: "RemoveRaftVoter", 83: "InitializeShareGroupState", 84: "ReadShareGroupState",
    85: "WriteShareGroupState", 86: "DeleteShareGroupState",
    87: "ReadShareGroupStateSummary", 88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe",
    93: "(key 93)", 94: "(key 94)",
}
# docs/kafka-differences.md "Topic configs": Kafka 4 removed these two (KIP-724); we keep
# accepting them as Kafka 3.x did, for clients and tools that still set them.
LEGACY_TOPIC_CONFIGS = {"message.downconversion.enable", "message.format.version"}


def unique(prefix: str = "diff") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def without_legacy_configs(answer: Any) -> Any:
    """Drop LEGACY_TOPIC_CONFIGS entries and Kafka-only topic configs from config lists.

    Kafka-only topic configs (tiered storage, compression levels, ...) are listed in
    docs/kafka-differences.md "Topic configs"; the ones both have must agree.
    """
    if isinstance(answer, dict):
        out = {}
        for key, value in answer.items():
            if key == "configs" and isinstance(value, list):
                value = [c for c in value if c.get("name") not in LEGACY_TOPIC_CONFIGS
                         and c.get("name") not in KAFKA_ONLY_TOPIC_CONFIGS]
            out[key] = without_legacy_configs(value)
        return out
    if isinstance(answer, list):
        return [without_legacy_configs(v) for v in answer]
    return answer


# docs/kafka-differences.md "Topic configs": topic configs of Kafka 4.4 we do not implement.
KAFKA_ONLY_TOPIC_CONFIGS = {
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "errors.deadletterqueue.group.enable", "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.decompressed.message.bytes", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "remote.copy.lag.bytes", "remote.copy.lag.ms",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable",
    "segment.index.bytes", "segment.jitter.ms",
}


def topic_configs_equal(pair: Pair, scenario: Any) -> Any:
    ours, kafka = pair.run(scenario)
    assert_same(without_legacy_configs(ours), without_legacy_configs(kafka))
    return ours


# -- ApiVersions ------------------------------------------------------------------------------


def test_api_versions_lack_only_the_documented_apis(pair: Pair) -> None:
    ours, kafka = api_versions(pair.ours.bootstrap), api_versions(pair.kafka.bootstrap)
    assert set(ours) - set(kafka) == set(), "we advertise an API Kafka 4 does not have"
    assert set(kafka) - set(ours) == set(NOT_IMPLEMENTED), (
        "Kafka's APIs we lack changed: update NOT_IMPLEMENTED and docs/kafka-differences.md")
    for key, (low, high) in ours.items():
        # Ranges may differ (reported in the doc), but must overlap: any client that Kafka
        # serves with a version we also implement gets that version from us.
        assert low <= kafka[key][1] and kafka[key][0] <= high, (key, ours[key], kafka[key])


# -- Metadata ---------------------------------------------------------------------------------


def _metadata(side: Side, topic: str, auto_create: bool) -> Any:
    return side.call(METADATA, {"topics": [{"name": topic}],
                                "allow_auto_topic_creation": auto_create})


def test_metadata_unknown_topic_without_auto_creation(pair: Pair) -> None:
    topic = unique()
    answer = pair.check(lambda s: _metadata(s, topic, False))
    assert answer["topics"][0]["error_code"] == "unknown_topic_or_partition"


@pytest.mark.parametrize("name", ["bad name!", ".", "x" * 250])
def test_metadata_invalid_topic_name_is_not_created(pair: Pair, name: str) -> None:
    answer = pair.check(lambda s: _metadata(s, name, True))
    assert answer["topics"][0]["error_code"] == "invalid_topic_exception"


def test_metadata_auto_creates_an_unknown_topic(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        first = _metadata(side, topic, True)["topics"][0]["error_code"]
        # docs/kafka-differences.md "Auto topic creation": Kafka creates through its
        # controller and first answers UNKNOWN_TOPIC_OR_PARTITION; we create before answering.
        settled = side.poll(METADATA, {"topics": [{"name": topic}],
                                       "allow_auto_topic_creation": True},
                            lambda a: a["topics"][0]["error_code"] == "none")
        return {"first": first, "settled": settled}

    ours, kafka = pair.run(scenario)
    assert ours["first"] == "none"
    assert kafka["first"] in ("none", "unknown_topic_or_partition")
    assert_same(ours["settled"], kafka["settled"])
    assert [p["partition_index"] for p in ours["settled"]["topics"][0]["partitions"]] == [0]


# -- CreateTopics -----------------------------------------------------------------------------

CREATE_CASES: dict[str, list[dict[str, Any]]] = {
    "invalid name": [topic_spec("bad name!")],
    "dot": [topic_spec(".")],
    "too long": [topic_spec("x" * 250)],
    "zero partitions": [topic_spec("{t}", 0)],
    "negative partitions": [topic_spec("{t}", -5)],
    "defaults": [topic_spec("{t}", -1, -1)],
    "replication 3": [topic_spec("{t}", 1, 3)],
    "replication 0": [topic_spec("{t}", 1, 0)],
    "assignment on node 0": [topic_spec("{t}", -1, -1, assignments=[[0], [0]])],
    "assignment on node 1": [topic_spec("{t}", -1, -1, assignments=[[1]])],
    "assignment with counts": [topic_spec("{t}", 2, -1, assignments=[[0]])],
    "assignment twice on node 0": [topic_spec("{t}", -1, -1, assignments=[[0, 0]])],
    "bad config value": [topic_spec("{t}", configs={"cleanup.policy": "bogus"})],
    "unknown config": [topic_spec("{t}", configs={"no.such.config": "1"})],
    "huge partition count": [topic_spec("{t}", 2**31 - 1)],
    "two topics": [topic_spec("{t}-a", 2), topic_spec("{t}-b", 1)],
    "duplicate name in one request": [topic_spec("{t}"), topic_spec("{t}")],
}


def _named(specs: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return [{**spec, "name": spec["name"].replace("{t}", topic)} for spec in specs]


@pytest.mark.parametrize("case", sorted(CREATE_CASES))
def test_create_topics(pair: Pair, case: str) -> None:
    specs = _named(CREATE_CASES[case], unique())
    topic_configs_equal(pair, lambda s: create_topics(s, *specs))


def test_create_topics_validate_only_then_create_then_duplicate(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        return [create_topics(side, topic_spec(topic, 3), validate_only=True),
                create_topics(side, topic_spec(topic, 3)),
                create_topics(side, topic_spec(topic, 3))]

    answers = topic_configs_equal(pair, scenario)
    assert [a["topics"][0]["error_code"] for a in answers] == [
        "none", "none", "topic_already_exists"]


def test_create_topics_with_message_format_version(pair: Pair) -> None:
    """docs/kafka-differences.md "Topic configs": Kafka 4 refuses the removed config, we keep
    accepting it as Kafka 3.x did; everything else about the answer is the same."""
    topic = unique()
    spec = topic_spec(topic, configs={"message.format.version": "3.0-IV1"})
    ours, kafka = pair.run(lambda s: create_topics(s, spec))
    assert ours["topics"][0]["error_code"] == "none"
    assert kafka["topics"][0]["error_code"] == "invalid_config"


# -- Produce ----------------------------------------------------------------------------------


def _one(answer: Any) -> Any:
    return partition_answer(answer)


def test_produce_to_unknown_topic_and_partition(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        missing = produce(side, topic + "-missing", batch())
        create_topic(side, topic, 2)
        return [missing, produce(side, topic, batch(3)), produce(side, topic, batch(2)),
                produce(side, topic, batch(), partition=1),
                produce(side, topic, batch(), partition=2)]

    answers = pair.check(scenario)
    assert [_one(a)["error_code"] for a in answers] == [
        "unknown_topic_or_partition", "none", "none", "none", "unknown_topic_or_partition"]
    assert [_one(a)["base_offset"] for a in answers[1:4]] == [0, 3, 0]


def test_produce_oversized_batches(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        create_topic(side, topic + "-small", max_message_bytes="1000")
        return [produce(side, topic, build_batch([Record(b"k", b"v" * 1_100_000, 1)])),
                produce(side, topic + "-small", build_batch([Record(b"k", b"v" * 2000, 1)])),
                produce(side, topic + "-small", build_batch([Record(b"k", b"v" * 100, 1)]))]

    answers = pair.check(scenario)
    assert [_one(a)["error_code"] for a in answers] == [
        "message_too_large", "message_too_large", "none"]


def test_produce_control_batch_from_a_client(pair: Pair) -> None:
    topic = unique()
    marker = Record(b"\0\0\0\1", b"\0\0\0\0\0\0", 1)

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return [produce(side, topic, build_batch([marker], attributes=ATTR_CONTROL)),
                produce(side, topic, build_batch([marker], producer_id=5, producer_epoch=0,
                                                 attributes=ATTR_CONTROL))]

    answers = pair.check(scenario)
    assert [_one(a)["error_code"] for a in answers] == ["invalid_record"] * 2


def test_produce_transactional_control_batch_without_transactional_id(pair: Pair) -> None:
    """Kafka's transactional-id authorization runs before record validation, control batches
    included: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, not INVALID_RECORD."""
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return produce(side, topic, build_control_batch(5, 0, True, 1))

    answer = pair.check(scenario)
    assert _one(answer)["error_code"] == "transactional_id_authorization_failed"


def test_produce_transactional_batch_without_transactional_id(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return produce(side, topic, batch(producer_id=5, producer_epoch=0, base_sequence=0,
                                          attributes=ATTR_TRANSACTIONAL))

    answer = pair.check(scenario)
    assert _one(answer)["error_code"] == "transactional_id_authorization_failed"


def test_produce_keyless_records_to_a_compacted_topic(pair: Pair) -> None:
    topic = unique()
    data = build_batch([Record(b"k", b"v", 1), Record(None, b"v", 2), Record(b"k2", b"v", 3)])

    def scenario(side: Side) -> Any:
        create_topic(side, topic, cleanup_policy="compact")
        return produce(side, topic, data)

    ours, kafka = pair.run(scenario)
    # The per-record message is prose (docs/kafka-differences.md "Error messages").
    for answer in (ours, kafka):
        for error in _one(answer)["record_errors"]:
            error.pop("batch_index_error_message")
    assert_same(ours, kafka)
    assert _one(ours)["error_code"] == "invalid_record"
    assert _one(ours)["record_errors"] == [{"batch_index": 1}]


def test_produce_into_internal_topic(pair: Pair) -> None:
    def scenario(side: Side) -> Any:
        find_coordinator(side, unique("group"))  # __consumer_offsets exists from here on
        return produce(side, "__consumer_offsets", batch())

    answer = pair.check(scenario)
    assert _one(answer)["error_code"] == "invalid_topic_exception"


def test_produce_with_a_bad_crc(pair: Pair) -> None:
    topic = unique()
    data = bytearray(batch())
    data[-1] ^= 0xFF

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return produce(side, topic, bytes(data))

    assert _one(pair.check(scenario))["error_code"] == "corrupt_message"


def test_produce_with_invalid_acks(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return [produce(side, topic, batch(), acks=2), produce(side, topic, batch(), acks=-2)]

    answers = pair.check(scenario)
    assert [_one(a)["error_code"] for a in answers] == ["invalid_required_acks"] * 2
