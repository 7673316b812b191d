"""KIP-848 consumer groups and share groups in __consumer_offsets as Kafka's record types
(groups/consumer_records.py, share_records.py): a group an older broker wrote as one JSON record
is read at start and rewritten as Kafka's records (the upgrade path), and it survives restarts
in either form with its epochs, members, subscriptions and assignments.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from helpers import EmbeddedBroker, create_topics

from streams.broker.groups import consumer_records, share_records
from streams.broker.groups.consumer import ClassicMembership, ConsumerGroup, ConsumerMember
from streams.broker.groups.group_store import encode_consumer, encode_share
from streams.broker.groups.offsets_codec import (
    CONSUMER_GROUP_KEY_VERSION,
    SHARE_GROUP_KEY_VERSION,
    partition_for,
)
from streams.broker.groups.protocols import GroupType
from streams.broker.groups.replay import stored_batches
from streams.broker.groups.share import ShareGroup, ShareMember
from streams.broker.records import decode_records
from streams.broker.topics import OFFSETS_TOPIC


def _share(broker: EmbeddedBroker) -> Any:
    assert broker.broker is not None
    return broker.broker.groups.protocol(GroupType.SHARE)


def _membership(broker: EmbeddedBroker, group_id: str) -> Any:
    group = broker.call(lambda: _share(broker).groups.get(group_id))
    assert group is not None, f"no share group {group_id}"
    return (group.epoch, sorted((m.member_id, m.epoch, sorted(m.subscribed), m.client_id)
                                for m in group.members.values()),
            {mid: sorted(tps) for mid, tps in group.assignment.items()})


def _metadata_values(broker: EmbeddedBroker, group_id: str,
                     record_type: int = share_records.GROUP_METADATA) -> list[bytes | None]:
    """Every value of the group's metadata record (ShareGroupMetadata 11, ConsumerGroupMetadata
    3) in __consumer_offsets, in order."""
    assert broker.broker is not None
    topic = broker.broker.topics.topics[OFFSETS_TOPIC]
    plog = topic.partitions[partition_for(group_id, len(topic.partitions))]
    key = share_records.group_key(record_type, group_id)
    return [r.value for batch, _ in stored_batches(plog) for r in decode_records(batch)
            if r.key == key]


def test_a_json_share_group_record_is_read_and_rewritten_as_kafkas(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"q": 2})
        # What a broker before Kafka's record types wrote: one JSON record under key 11.
        old = ShareGroup("old", 7, {
            "m1": ShareMember("m1", 7, frozenset({"q"}), time.monotonic(), "c1", "/h1"),
            "m2": ShareMember("m2", 6, frozenset({"q"}), time.monotonic(), "c2", "/h2", "r1")},
            assignment={"m1": {("q", 0)}, "m2": {("q", 1)}})
        offsets = broker.broker.groups.offsets  # type: ignore[union-attr]
        broker.call(lambda: offsets.write_group_record("old", SHARE_GROUP_KEY_VERSION,
                                                       encode_share(old)))
        assert _metadata_values(broker, "old")[-1][:1] == b"{"

        broker.restart()
        expected = (7, [("m1", 7, ["q"], "c1"), ("m2", 6, ["q"], "c2")],
                    {"m1": [("q", 0)], "m2": [("q", 1)]})
        assert _membership(broker, "old") == expected
        latest = _metadata_values(broker, "old")[-1]
        assert latest is not None and latest[:2] == b"\x00\x00"  # Kafka's value version 0
        rack = broker.call(lambda: _share(broker).groups["old"].members["m2"].rack_id)
        assert rack == "r1"

        broker.restart()  # now from Kafka's records only
        assert _membership(broker, "old") == expected
        assert len(_metadata_values(broker, "old")) == 2  # nothing rewritten this time
    finally:
        broker.stop()


def _consumer(broker: EmbeddedBroker, group_id: str) -> Any:
    assert broker.broker is not None
    group = broker.call(lambda: broker.broker.groups.protocol(GroupType.CONSUMER)  # type: ignore[union-attr]
                        .groups.get(group_id))
    assert group is not None, f"no consumer group {group_id}"
    return (group.group_epoch, group.assignment_epoch, sorted(group.topic_sizes.items()),
            {mid: sorted(tps) for mid, tps in group.target.items()},
            sorted((m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host,
                    m.rebalance_timeout_ms, sorted(m.subscribed),
                    m.regex.pattern if m.regex else None, m.server_assignor, m.epoch,
                    m.previous_epoch, sorted(m.assigned), sorted(m.revoking), m.left_static,
                    None if m.classic is None else (m.classic.session_timeout_ms,
                                                    m.classic.protocols))
                   for m in group.members.values()))


def test_a_json_consumer_group_record_is_read_and_rewritten_as_kafkas(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"q": 3, "r": 1})
        now = time.monotonic()
        old = ConsumerGroup("old-kg", 9, 9, topic_sizes={"q": 3, "r": 1})
        old.members = {
            "a": ConsumerMember("a", None, None, "ca", "/1", 30000, {"q"}, None, "range", 9, 8,
                                {("q", 0), ("q", 1)}, {("q", 2)}, last_heartbeat=now),
            "b": ConsumerMember("b", "inst-b", "rk", "cb", "/2", 45000, set(),
                                re.compile("r.*"), None, 9, 9, {("r", 0)}, set(),
                                last_heartbeat=now, left_static=True),
            "c": ConsumerMember("c", None, None, "cc", "/3", 60000, {"q"}, None, None, 8, 7,
                                set(), set(), last_heartbeat=now, classic=ClassicMembership(
                                    10000, (("range", b"\x00\x01sub"), ("roundrobin", b"")),
                                    session_deadline=now))}
        old.static = {"inst-b": "b"}
        old.target = {"a": {("q", 0), ("q", 1)}, "b": {("r", 0)}, "c": {("q", 2)}}
        offsets = broker.broker.groups.offsets  # type: ignore[union-attr]
        broker.call(lambda: offsets.write_group_record("old-kg", CONSUMER_GROUP_KEY_VERSION,
                                                       encode_consumer(old)))
        broker.restart()
        loaded = _consumer(broker, "old-kg")
        assert loaded == (9, 9, [("q", 3), ("r", 1)],
                          {"a": [("q", 0), ("q", 1)], "b": [("r", 0)], "c": [("q", 2)]},
                          [("a", None, None, "ca", "/1", 30000, ["q"], None, "range", 9, 8,
                            [("q", 0), ("q", 1)], [("q", 2)], False, None),
                           ("b", "inst-b", "rk", "cb", "/2", 45000, [], "r.*", None, 9, 9,
                            [("r", 0)], [], True, None),
                           ("c", None, None, "cc", "/3", 60000, ["q"], None, None, 8, 7, [], [],
                            False, (10000, (("range", b"\x00\x01sub"), ("roundrobin", b""))))])
        metadata = consumer_records.GROUP_METADATA
        latest = _metadata_values(broker, "old-kg", metadata)[-1]
        assert latest is not None and latest[:2] == b"\x00\x00"  # Kafka's value version 0

        broker.restart()  # now from Kafka's records only
        again = _consumer(broker, "old-kg")
        # A static member that left is written as Kafka writes it (epoch -2, its epoch in
        # PreviousMemberEpoch): its own previous epoch is not kept.
        b_then = [m for m in loaded[4] if m[0] == "b"][0]
        b_now = [m for m in again[4] if m[0] == "b"][0]
        assert b_now == (*b_then[:10], -1, *b_then[11:])
        assert [m for m in again[4] if m[0] != "b"] == [m for m in loaded[4] if m[0] != "b"]
        assert again[:4] == loaded[:4]
        assert len(_metadata_values(broker, "old-kg", metadata)) == 2  # not rewritten again
    finally:
        broker.stop()
