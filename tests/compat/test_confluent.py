"""confluent-kafka (librdkafka 2.16) against the bundled broker."""

from __future__ import annotations

import time

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
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from helpers import wait_until

pytestmark = pytest.mark.compat


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(broker, name: str, partitions: int = PARTITIONS, **configs: str) -> None:
    client = admin(broker)  # must outlive the future
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config=configs)], operation_timeout=10
    )
    futures[name].result(15)


def produce(broker, topic: str, records: list[Sent], **conf: object) -> list[tuple[int, int]]:
    """Produce and return the acknowledged (partition, offset) of each record, in order."""
    producer = Producer({
        "bootstrap.servers": broker.bootstrap,
        "partitioner": "murmur2_random",  # Java-compatible; librdkafka defaults to CRC32
        "linger.ms": 20,
        "acks": "all",
        **conf,
    })
    acked: dict[int, tuple[int, int]] = {}

    def on_delivery(index: int):
        def callback(err, msg) -> None:
            assert err is None, err
            acked[index] = (msg.partition(), msg.offset())

        return callback

    for i, r in enumerate(records):
        producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                         timestamp=r.timestamp, on_delivery=on_delivery(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert len(acked) == len(records)
    return [acked[i] for i in range(len(records))]


def consumer(broker, **conf: object) -> Consumer:
    return Consumer({
        "bootstrap.servers": broker.bootstrap,
        "group.id": "compat-assign",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        **conf,
    })


def consume_all(broker, topic: str, partitions: int, count: int) -> list:
    c = consumer(broker)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        messages = []

        def got_all() -> bool:
            msg = c.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                messages.append(msg)
            return len(messages) >= count

        wait_until(got_all, 30, interval=0, message=f"{count} records from {topic}")
        return messages
    finally:
        c.close()


def as_sent(msg) -> Sent:
    return Sent(msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp()[1])


@pytest.mark.parametrize("codec", CODECS)
def test_keyed_produce_consume_each_codec(broker, codec: str) -> None:
    topic = f"confluent-{codec}"
    create_topic(broker, topic)
    sent = sample_records()
    acked = produce(broker, topic, sent, **{"compression.type": codec})
    for (partition, _offset), record in zip(acked, sent, strict=True):
        assert partition == kafka_partition(record.key, PARTITIONS)
    messages = consume_all(broker, topic, PARTITIONS, len(sent))
    got = [(m.partition(), m.offset(), as_sent(m)) for m in messages]
    check_round_trip(sent, got, PARTITIONS)
    assert sorted((p, o) for p, o, _ in got) == sorted(acked)


def test_admin_create_describe_delete(broker) -> None:
    client = admin(broker)
    create_topic(broker, "confluent-admin", 3, **{"retention.ms": "3600000",
                                                  "cleanup.policy": "compact"})
    metadata = client.list_topics(timeout=10)
    assert "confluent-admin" in metadata.topics
    assert sorted(metadata.topics["confluent-admin"].partitions) == [0, 1, 2]

    resource = ConfigResource("topic", "confluent-admin")
    configs = client.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "compact"
    assert not configs["retention.ms"].is_default
    assert configs["segment.bytes"].is_default

    # An existing name is refused with TOPIC_ALREADY_EXISTS.
    again = client.create_topics([NewTopic("confluent-admin", 1, 1)])["confluent-admin"]
    with pytest.raises(KafkaException) as excinfo:
        again.result(10)
    assert excinfo.value.args[0].name() == "TOPIC_ALREADY_EXISTS"

    client.delete_topics(["confluent-admin"], operation_timeout=10)["confluent-admin"].result(10)
    wait_until(lambda: "confluent-admin" not in client.list_topics(timeout=10).topics, 10,
               message="topic deleted")


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_offsets_for_times(broker, codec: str) -> None:
    topic = f"confluent-times-{codec}"
    create_topic(broker, topic, 1)
    # Timestamps 0, 10, 20, ... relative to BASE_TS; two produce calls make several batches.
    records = [Sent(b"k", f"v{i}".encode(), (), BASE_TS + 10 * i) for i in range(30)]
    produce(broker, topic, records[:15], **{"compression.type": codec})
    produce(broker, topic, records[15:], **{"compression.type": codec})
    c = consumer(broker)
    try:
        for target, expected in [(BASE_TS - 5, 0), (BASE_TS, 0), (BASE_TS + 1, 1),
                                  (BASE_TS + 70, 7), (BASE_TS + 145, 15), (BASE_TS + 151, 16),
                                  (BASE_TS + 290, 29)]:
            [tp] = c.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert tp.error is None
            assert tp.offset == expected, (target, tp.offset)
        [after] = c.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 291)], timeout=10)
        assert after.offset == -1  # no record at/after it: OFFSET_END
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 30)
    finally:
        c.close()


def test_group_rebalance_and_committed_offsets_survive_restart(broker) -> None:
    topic = "confluent-group"
    create_topic(broker, topic)
    sent = sample_records(40)
    produce(broker, topic, sent)
    conf = {"group.id": "confluent-g", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range"}
    c1, c2 = consumer(broker, **conf), consumer(broker, **conf)
    c3 = None
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])
        seen: dict[int, list] = {}

        def poll_both(condition):
            def step() -> bool:
                for c in (c1, c2):
                    if c is None:
                        continue
                    msg = c.poll(0.05)
                    if msg is not None and msg.error() is None:
                        seen.setdefault(msg.partition(), []).append(msg.offset())
                return condition()

            return step

        def split() -> bool:
            a, b = c1.assignment(), c2.assignment()
            return bool(a) and bool(b) and len(a) + len(b) == PARTITIONS

        wait_until(poll_both(split), 40, interval=0, message="both members assigned")
        assert {tp.partition for tp in c1.assignment()}.isdisjoint(
            {tp.partition for tp in c2.assignment()})

        c2.close()  # LeaveGroup: c1 must take over every partition
        c2 = None
        wait_until(poll_both(lambda: len(c1.assignment()) == PARTITIONS), 40, interval=0,
                   message="survivor owns all partitions")
        commits = [TopicPartition(topic, p, 1 + p) for p in range(PARTITIONS)]
        c1.commit(offsets=commits, asynchronous=False)
        c1.close()
        c1 = None

        broker.restart()

        c3 = consumer(broker, **{"group.id": "confluent-g"})
        committed = c3.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                 timeout=15)
        assert sorted((tp.partition, tp.offset) for tp in committed) == [
            (p, 1 + p) for p in range(PARTITIONS)]
        # A new member resumes at the committed offsets.
        c3.subscribe([topic])
        first: dict[int, int] = {}

        def resumed() -> bool:
            msg = c3.poll(0.2)
            if msg is not None and msg.error() is None:
                first.setdefault(msg.partition(), msg.offset())
            return len(first) == PARTITIONS

        wait_until(resumed, 40, interval=0, message="resumed on every partition")
        assert first == {p: 1 + p for p in range(PARTITIONS)}
    finally:
        for c in (c1, c2, c3):
            if c is not None:
                c.close()


def test_produce_timestamps_without_explicit_value_are_create_time(broker) -> None:
    create_topic(broker, "confluent-ts", 1)
    before = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("confluent-ts", key=b"k", value=b"v")
    assert p.flush(10) == 0
    [msg] = consume_all(broker, "confluent-ts", 1, 1)
    ts_type, ts = msg.timestamp()
    assert ts_type == 1  # TIMESTAMP_CREATE_TIME
    assert ts >= before
