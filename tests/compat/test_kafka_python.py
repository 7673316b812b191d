"""kafka-python 3.0 against the bundled broker (idempotent acks=all producer by default)."""

from __future__ import annotations

import threading

import pytest
from compat_util import (
    BASE_TS,
    CODECS,
    PARTITIONS,
    Sent,
    check_round_trip,
    kafka_partition,
    sample_records,
)
from helpers import wait_until
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

pytestmark = pytest.mark.compat


def admin(broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)


def create_topic(broker, name: str, partitions: int = PARTITIONS, **configs: str) -> None:
    client = admin(broker)
    try:
        client.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    finally:
        client.close()


def produce(broker, topic: str, records: list[Sent], **conf: object) -> list[tuple[int, int]]:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20, **conf)
    try:
        # The defaults are the point: enable_idempotence=True and acks=all (InitProducerId).
        assert producer.config["enable_idempotence"] is True
        futures = [
            producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                          timestamp_ms=r.timestamp)
            for r in records
        ]
        producer.flush(30)
        metadata = [f.get(timeout=30) for f in futures]
    finally:
        producer.close(10)
    return [(m.partition, m.offset) for m in metadata]


def consumer(broker, **conf: object) -> KafkaConsumer:
    conf = {"auto_offset_reset": "earliest", "enable_auto_commit": False, **conf}
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, **conf)


def consume_all(broker, topic: str, partitions: int, count: int) -> list:
    c = consumer(broker)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        messages: list = []

        def got_all() -> bool:
            for batch in c.poll(timeout_ms=200).values():
                messages.extend(batch)
            return len(messages) >= count

        wait_until(got_all, 30, interval=0, message=f"{count} records from {topic}")
        return messages
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_keyed_idempotent_produce_consume_each_codec(broker, codec: str) -> None:
    topic = f"kafka-python-{codec}"
    create_topic(broker, topic)
    sent = sample_records()
    acked = produce(broker, topic, sent, compression_type=None if codec == "none" else codec)
    for (partition, _offset), record in zip(acked, sent, strict=True):
        assert partition == kafka_partition(record.key, PARTITIONS)
    messages = consume_all(broker, topic, PARTITIONS, len(sent))
    got = [(m.partition, m.offset, Sent(m.key, m.value, tuple(m.headers), m.timestamp))
           for m in messages]
    check_round_trip(sent, got, PARTITIONS)
    assert sorted((p, o) for p, o, _ in got) == sorted(acked)


def test_admin_create_describe_delete(broker) -> None:
    client = admin(broker)
    try:
        client.create_topics([NewTopic("kp-admin", 2, 1,
                                       topic_configs={"retention.ms": "7200000",
                                                      "max.message.bytes": "65536"})])
        with pytest.raises(TopicAlreadyExistsError):
            client.create_topics([NewTopic("kp-admin", 1, 1)], raise_errors=True)
        [described] = client.describe_topics(["kp-admin"])
        assert described["error_code"] == 0
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1]

        resource = ConfigResource(ConfigResourceType.TOPIC, "kp-admin")
        modified = client.describe_configs([resource])["topic"]["kp-admin"]
        assert {k: v["value"] for k, v in modified.items()} == {
            "retention.ms": "7200000", "max.message.bytes": "65536"}
        every = client.describe_configs([resource], config_filter="all")["topic"]["kp-admin"]
        assert every["cleanup.policy"]["value"] == "delete"
        assert every["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

        assert "kp-admin" in client.list_topics()
        client.delete_topics(["kp-admin"])
        wait_until(lambda: "kp-admin" not in client.list_topics(), 10, message="topic deleted")
    finally:
        client.close()


def test_offsets_for_times_and_watermarks(broker) -> None:
    topic = "kp-times"
    create_topic(broker, topic, 1)
    records = [Sent(b"k", f"v{i}".encode(), (), BASE_TS + 10 * i) for i in range(20)]
    produce(broker, topic, records[:10], compression_type="gzip")
    produce(broker, topic, records[10:], compression_type="gzip")
    c = consumer(broker)
    try:
        tp = TopicPartition(topic, 0)
        for target, expected in [(BASE_TS - 1, 0), (BASE_TS + 5, 1), (BASE_TS + 90, 9),
                                 (BASE_TS + 91, 10), (BASE_TS + 190, 19)]:
            found = c.offsets_for_times({tp: target})[tp]
            assert found is not None
            assert (found.offset, found.timestamp) == (expected, BASE_TS + 10 * expected)
        assert c.offsets_for_times({tp: BASE_TS + 191})[tp] is None
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 20}
    finally:
        c.close()


class GroupMember(threading.Thread):
    """Polls one kafka-python consumer on its own thread, as an application would.

    Two consumers polled in turn from one thread can stall a rebalance: one blocks in its
    JoinGroup while the other cannot send its own. The consumer is closed on the polling thread
    too.
    """

    def __init__(self, consumer: KafkaConsumer, topic: str) -> None:
        super().__init__(daemon=True)
        self.consumer = consumer
        self.topic = topic
        self.assigned: frozenset[int] = frozenset()
        self.stopping = threading.Event()

    def run(self) -> None:
        # Fetch the topic's metadata before joining: a kafka-python leader that joins before
        # its metadata request returns assigns nothing ("No partition metadata for topic") and
        # under heavy load was seen not to recover within the test's 40 s.
        self.consumer.partitions_for_topic(self.topic)
        self.consumer.subscribe([self.topic])
        try:
            while not self.stopping.is_set():
                self.consumer.poll(timeout_ms=100)
                self.assigned = frozenset(tp.partition for tp in self.consumer.assignment())
        finally:
            self.consumer.close()  # sends LeaveGroup

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        assert not self.is_alive(), "consumer thread did not stop"


def test_group_rebalance_and_committed_offsets_survive_restart(broker) -> None:
    from kafka.structs import OffsetAndMetadata

    topic = "kp-group"
    create_topic(broker, topic)
    produce(broker, topic, sample_records(40))
    conf = {"group_id": "kp-g", "session_timeout_ms": 6000, "heartbeat_interval_ms": 300}
    m1 = GroupMember(consumer(broker, **conf), topic)
    m2 = GroupMember(consumer(broker, **conf), topic)
    c3 = None
    try:
        m1.start()
        m2.start()

        def split() -> bool:
            a, b = m1.assigned, m2.assigned
            return bool(a) and bool(b) and not a & b and len(a | b) == PARTITIONS

        wait_until(split, 40, message="both members assigned")
        m2.stop()
        wait_until(lambda: len(m1.assigned) == PARTITIONS, 40,
                   message="survivor owns all partitions")
        m1.stop()  # the group is empty now: a consumer with assigned partitions may commit
        committer = consumer(broker, group_id="kp-g")
        try:
            committer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            committer.commit({TopicPartition(topic, p): OffsetAndMetadata(1 + p, "", -1)
                              for p in range(PARTITIONS)})
        finally:
            committer.close()

        broker.restart()

        c3 = consumer(broker, group_id="kp-g")
        for p in range(PARTITIONS):
            assert c3.committed(TopicPartition(topic, p)) == 1 + p
        c3.subscribe([topic])
        first: dict[int, int] = {}

        def resumed() -> bool:
            for tp, batch in c3.poll(timeout_ms=200).items():
                if batch:
                    first.setdefault(tp.partition, batch[0].offset)
            return len(first) == PARTITIONS

        wait_until(resumed, 40, interval=0, message="resumed on every partition")
        assert first == {p: 1 + p for p in range(PARTITIONS)}
    finally:
        for member in (m1, m2):
            if member.is_alive():
                member.stop()
        if c3 is not None:
            c3.close()
