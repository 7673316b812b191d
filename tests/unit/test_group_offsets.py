"""__consumer_offsets: record format, partitioning, persistence and replay."""

from __future__ import annotations

import asyncio
from pathlib import Path

from streams.broker.config import BrokerConfig
from streams.broker.groups.offsets import OffsetStore
from streams.broker.groups.offsets_codec import (
    GroupKey,
    OffsetAndMetadata,
    OffsetKey,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_offset_key,
    encode_offset_value,
    java_string_hash,
    partition_for,
)
from streams.broker.records import (
    build_control_batch,
    decode_records,
    iter_batches,
    validate_produced,
)
from streams.broker.topics import OFFSETS_TOPIC, TopicManager


def test_java_string_hash_matches_java() -> None:
    # Values of "...".hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001f600") == 1772899  # surrogate pair: two UTF-16 units


def test_partition_for_uses_kafka_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # abs(MIN_VALUE) is 0 in Kafka
    assert partition_for("my-group", 50) == 1906497762 % 50
    assert partition_for("connect-x", 1) == 0


def test_key_and_value_bytes_are_kafkas_layout() -> None:
    key = encode_offset_key(OffsetKey("g", "t", 3))
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    value = encode_offset_value(OffsetAndMetadata(42, 7, "md", 1000))
    assert value == (b"\x00\x03" + (42).to_bytes(8, "big") + (7).to_bytes(4, "big")
                     + b"\x00\x02md" + (1000).to_bytes(8, "big"))
    assert decode_key(key) == OffsetKey("g", "t", 3)
    assert decode_offset_value(value) == OffsetAndMetadata(42, 7, "md", 1000)
    assert decode_key(encode_group_key("g")) == GroupKey("g")
    v1 = (b"\x00\x01" + (5).to_bytes(8, "big") + b"\x00\x00" + (9).to_bytes(8, "big")
          + (11).to_bytes(8, "big"))
    assert decode_offset_value(v1) == OffsetAndMetadata(5, -1, "", 9, 11)


def _topics(tmp_path: Path) -> TopicManager:
    topics = TopicManager(BrokerConfig.from_mapping({"data_dir": tmp_path}))
    topics.load()
    return topics


def test_commit_is_written_and_replayed(tmp_path: Path) -> None:
    async def write() -> None:
        topics = _topics(tmp_path)
        store = OffsetStore(topics, 4)
        await store.commit("g", {("t", 0): OffsetAndMetadata(10, 1, "a", 5)})
        await store.commit("g", {("t", 0): OffsetAndMetadata(12, 1, "b", 6),
                                 ("t", 1): OffsetAndMetadata(3)})
        await store.commit("other", {("u", 0): OffsetAndMetadata(1)})
        await store.delete_offsets("g", [("t", 1)])
        await store.delete_group("other")
        plog = topics.partition(OFFSETS_TOPIC, store.partition_for("g"))
        records = [r for _, h in iter_batches(plog.read(0, 1 << 20))
                   for r in decode_records(plog.read(h.base_offset, 1 << 20)[: h.size])]
        assert records[0].key == encode_offset_key(OffsetKey("g", "t", 0))
        assert topics.get(OFFSETS_TOPIC).configs == {"cleanup.policy": "compact"}
        topics.close()

    asyncio.run(write())
    topics = _topics(tmp_path)
    store = OffsetStore(topics, 4)
    store.load()
    assert store.all_for("g") == {("t", 0): OffsetAndMetadata(12, 1, "b", 6)}
    assert store.group_ids() == {"g"}
    topics.close()


def test_transactional_offsets_pending_until_marker(tmp_path: Path) -> None:
    async def write() -> None:
        topics = _topics(tmp_path)
        store = OffsetStore(topics, 2)
        await store.commit("g", {("t", 0): OffsetAndMetadata(1)})
        await store.stage_transactional(7, 0, "g", {("t", 0): OffsetAndMetadata(5)})
        await store.stage_transactional(8, 0, "g", {("t", 1): OffsetAndMetadata(9)})
        assert store.has_pending("g", ("t", 0))
        assert store.get("g", ("t", 0)) == OffsetAndMetadata(1)
        # The transaction coordinator writes the marker, then tells the store.
        plog = topics.partition(OFFSETS_TOPIC, store.partition_for("g"))
        marker = bytearray(build_control_batch(7, 0, True, 0))
        plog.append(marker, validate_produced(bytes(marker)))
        store.complete_transaction(7, True)
        assert store.get("g", ("t", 0)) is not None
        assert store.get("g", ("t", 0)).offset == 5  # type: ignore[union-attr]
        assert not store.has_pending("g", ("t", 0))
        assert store.has_pending("g", ("t", 1))
        topics.close()

    asyncio.run(write())
    topics = _topics(tmp_path)
    store = OffsetStore(topics, 2)
    store.load()
    assert store.get("g", ("t", 0)) == OffsetAndMetadata(5, commit_timestamp=store.get(
        "g", ("t", 0)).commit_timestamp)  # type: ignore[union-attr]
    assert store.has_pending("g", ("t", 1))  # producer 8 is still open after the restart
    store.complete_transaction(8, False)
    assert store.get("g", ("t", 1)) is None
    topics.close()
