"""Kafka reads our share-group records: every record our broker wrote to ``__consumer_offsets``
for a share group goes through Kafka 4.4's own GroupCoordinatorRecordSerde (the serde its group
coordinator loads that topic with; java/GroupRecordDecoder.java), and what Kafka decodes must
be the group our broker describes: the epoch, each member's client and subscription, its
current and target assignment by topic id, and tombstones for a member that left.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EmbeddedBroker, create_topics, reference_unavailable

from streams.broker.groups.offsets_codec import partition_for
from streams.broker.groups.replay import stored_batches
from streams.broker.records import decode_records
from streams.broker.topics import OFFSETS_TOPIC

from . import kafka
from .dsl_runner import compile_java
from .wire import Connection

SOURCE = kafka.HERE / "java" / "GroupRecordDecoder.java"
HEARTBEAT, DESCRIBE = 76, 77


class Decoder:
    """One JVM answering a line of JSON per record line."""

    def __init__(self) -> None:
        classes = compile_java(SOURCE, kafka.CACHE / "group-record-decoder")
        self.proc = subprocess.Popen(
            ["java", *kafka.JAVA_OPTS, "-cp", f"{classes}:{kafka.LIBS}/*", "GroupRecordDecoder"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8")

    def decode(self, key: bytes, value: bytes | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{key.hex()} {'-' if value is None else value.hex()}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def decoder() -> Iterator[Decoder]:
    reason = reference_unavailable("Kafka's group coordinator serde")
    if reason:
        pytest.skip(reason)
    instance = Decoder()
    try:
        yield instance
    finally:
        instance.close()


def _heartbeat(c: Connection, group: str, member: str, epoch: int,
               topics: list[str] | None = None) -> dict[str, Any]:
    answer = c.send(HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                   "subscribed_topic_names": topics})
    assert answer is not None and answer["error_code"] == "none", answer
    return answer


def _group_records(broker: EmbeddedBroker, group: str) -> list[tuple[bytes, bytes | None]]:
    """Every record of ``group``'s partition of __consumer_offsets, in log order."""
    assert broker.broker is not None
    offsets = broker.broker.topics.topics[OFFSETS_TOPIC]
    plog = offsets.partitions[partition_for(group, len(offsets.partitions))]
    return [(r.key, r.value) for batch, _ in stored_batches(plog)
            for r in decode_records(batch) if r.key is not None]


def test_kafka_decodes_our_share_group_records(decoder: Decoder, tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"q": 3, "r": 1})
        group = f"sg-{uuid.uuid4().hex[:6]}"
        with Connection(broker.bootstrap) as c:
            epochs = {m: _heartbeat(c, group, m, 0, topics)["member_epoch"] for m, topics in
                      (("m1", ["q"]), ("m2", ["q", "r"]), ("gone", ["r"]))}
            _heartbeat(c, group, "gone", epochs.pop("gone"))
            _heartbeat(c, group, "gone", -1)
            for member in epochs:  # each member catches up with the group's epoch
                epochs[member] = _heartbeat(c, group, member, epochs[member])["member_epoch"]
            described = c.send(DESCRIBE, 1, {"group_ids": [group],
                                             "include_authorized_operations": False})
            assert described is not None
        records = _group_records(broker, group)
        # Kafka's Uuid.toString: URL-safe base64 without padding
        ids = {base64.urlsafe_b64encode(t.topic_id.bytes).decode().rstrip("="): t.name
               for t in broker.broker.topics.topics.values()}
    finally:
        broker.stop()

    latest: dict[tuple[int, str], Any] = {}
    for key, value in records:
        decoded = decoder.decode(key, value)
        assert "error" not in decoded, decoded
        if decoded["type"] in (1, 2):  # offset commits and classic groups: not this test's
            continue
        assert decoded["key"]["groupId"] == group
        latest[(decoded["type"], decoded["key"].get("memberId", ""))] = decoded["value"]

    want = described["groups"][0]
    assert latest[(11, "")]["epoch"] == want["group_epoch"]
    assert latest[(12, "")]["assignmentEpoch"] == want["assignment_epoch"]
    for member in want["members"]:
        mid = member["member_id"]
        assert latest[(10, mid)]["subscribedTopicNames"] == member["subscribed_topic_names"]
        assert latest[(10, mid)]["clientId"] == member["client_id"]
        current = latest[(14, mid)]
        assert current["memberEpoch"] == member["member_epoch"] == epochs[mid]
        assert current["state"] == 0
        expected = sorted((t["topic_name"], sorted(t["partitions"]))
                          for t in member["assignment"]["topic_partitions"])
        for kind, field in ((14, "assignedPartitions"), (13, "topicPartitions")):
            got = sorted((ids[t["topicId"]], sorted(t["partitions"]))
                         for t in latest[(kind, mid)][field])
            assert got == expected, (kind, mid)
    assert sorted(m["member_id"] for m in want["members"]) == ["m1", "m2"]
    assert sum(len(t["partitions"]) for m in want["members"]
               for t in m["assignment"]["topic_partitions"]) >= 4  # q's 3 and r's 1
    for kind in (10, 13, 14):  # the member that left: its records' last word is a tombstone
        assert latest[(kind, "gone")] is None
