"""Share-group membership in __consumer_offsets as Kafka's record types (groups/share_records.py):
a group written by an older broker as one JSON record is read at start and rewritten as Kafka's
records (the upgrade path), and a group survives restarts in either form with its epoch,
members, subscriptions and assignment.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from helpers import EmbeddedBroker, create_topics

from streams.broker.groups import share_records
from streams.broker.groups.group_store import encode_share
from streams.broker.groups.offsets_codec import SHARE_GROUP_KEY_VERSION, partition_for
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


def _metadata_values(broker: EmbeddedBroker, group_id: str) -> list[bytes | None]:
    """Every ShareGroupMetadata value (key 11) of the group in __consumer_offsets, in order."""
    assert broker.broker is not None
    topic = broker.broker.topics.topics[OFFSETS_TOPIC]
    plog = topic.partitions[partition_for(group_id, len(topic.partitions))]
    key = share_records.group_key(share_records.GROUP_METADATA, group_id)
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
