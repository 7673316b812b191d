"""Kafka reads our group records: every record our broker wrote to ``__consumer_offsets`` for a
KIP-848 consumer group or a share group goes through Kafka 4.4's own
GroupCoordinatorRecordSerde (the serde its group coordinator loads that topic with;
java/GroupRecordDecoder.java), and what Kafka decodes must be the group our broker describes
(ConsumerGroupDescribe, ShareGroupDescribe): the epochs, each member's client and subscription,
its current and target assignment by topic id, and tombstones for a member that left.
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

from streams.broker.groups import consumer_records
from streams.broker.groups.offsets_codec import partition_for
from streams.broker.groups.replay import stored_batches
from streams.broker.records import decode_records
from streams.broker.topics import OFFSETS_TOPIC

from . import kafka
from .dsl_runner import compile_java
from .wire import Connection

SOURCE = kafka.HERE / "java" / "GroupRecordDecoder.java"
HEARTBEAT, DESCRIBE = 76, 77
CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = 68, 69


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


def _latest(decoder: Decoder, records: list[tuple[bytes, bytes | None]], group: str
            ) -> dict[tuple[int, str], Any]:
    """Kafka's reading of each of the group's records, the last one of each key: (record
    type, member id or "") -> the value as Kafka's JSON, None for a tombstone."""
    latest: dict[tuple[int, str], Any] = {}
    for key, value in records:
        decoded = decoder.decode(key, value)
        assert "error" not in decoded, decoded
        if decoded["type"] in (1, 2):  # offset commits and classic groups: not this test's
            continue
        assert decoded["key"]["groupId"] == group
        latest[(decoded["type"], decoded["key"].get("memberId", ""))] = decoded["value"]
    return latest


def _topic_ids(broker: EmbeddedBroker) -> dict[str, str]:
    """Kafka's Uuid.toString (URL-safe base64 without padding) -> topic name."""
    assert broker.broker is not None
    return {base64.urlsafe_b64encode(t.topic_id.bytes).decode().rstrip("="): t.name
            for t in broker.broker.topics.topics.values()}


def _named(ids: dict[str, str], entries: list[dict[str, Any]]) -> list[tuple[str, list[int]]]:
    return sorted((ids[t["topicId"]], sorted(t["partitions"])) for t in entries)


def _described(assignment: dict[str, Any]) -> list[tuple[str, list[int]]]:
    return sorted((t["topic_name"], sorted(t["partitions"]))
                  for t in assignment["topic_partitions"])


def test_kafka_decodes_our_consumer_group_records(decoder: Decoder, tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        create_topics(broker.bootstrap, {"q": 3, "r": 1, "rx": 2})
        group = f"kg-{uuid.uuid4().hex[:6]}"
        with Connection(broker.bootstrap) as c:
            topic_ids = {t["name"]: uuid.UUID(str(t["topic_id"])) for t in c.send(3, 12, {
                "topics": None, "allow_auto_topic_creation": False})["topics"]}
            owned: dict[str, list[tuple[str, list[int]]]] = {}
            epochs: dict[str, int] = {}

            def heartbeat(member: str, epoch: int, **join: Any) -> dict[str, Any]:
                body = {"group_id": group, "member_id": member, "member_epoch": epoch,
                        "instance_id": join.get("instance"), "rack_id": join.get("rack"),
                        "rebalance_timeout": 30000 if epoch == 0 else -1,
                        "subscribed_topic_names": join.get("topics"),
                        "subscribed_topic_regex": join.get("regex"),
                        "server_assignor": join.get("assignor"),
                        "topic_partitions": [{"topic_id": topic_ids[t], "partitions": ps}
                                             for t, ps in owned.get(member, [])]}
                answer = c.send(CONSUMER_HEARTBEAT, 1, body)
                assert answer is not None and answer["error_code"] == "none", answer
                if answer["member_epoch"] >= 0:
                    epochs[member] = answer["member_epoch"]
                if answer.get("assignment") is not None:
                    names = {v: k for k, v in topic_ids.items()}
                    owned[member] = [(names[uuid.UUID(str(t["topic_id"]))], t["partitions"])
                                     for t in answer["assignment"]["topic_partitions"]]
                return answer

            heartbeat("m1", 0, topics=["q"], assignor="uniform")
            heartbeat("m2", 0, topics=["q", "r"], instance="i2", rack="rk")
            heartbeat("m3", 0, topics=[], regex="rx.*")
            heartbeat("gone", 0, topics=["r"])
            heartbeat("gone", -1)
            for _ in range(6):  # members reconcile: revoke, then take what was released
                for member in ("m1", "m2", "m3"):
                    heartbeat(member, epochs[member])
            described = c.send(CONSUMER_DESCRIBE, 1, {"group_ids": [group],
                                                      "include_authorized_operations": False})
            assert described is not None
            heartbeat("m2", -2)  # a static member leaves, to come back
        records = _group_records(broker, group)
        ids = _topic_ids(broker)
    finally:
        broker.stop()

    latest = _latest(decoder, records, group)
    want = described["groups"][0]
    assert want["group_state"] == "Stable", want
    assert latest[(3, "")]["epoch"] == want["group_epoch"]
    assert latest[(6, "")]["assignmentEpoch"] == want["assignment_epoch"]
    sizes = {ids[t["topicId"]]: t["numPartitions"] for t in latest[(4, "")]["topics"]}
    assert sizes == {"q": 3, "r": 1, "rx": 2}
    assert sorted(m["member_id"] for m in want["members"]) == ["m1", "m2", "m3"]
    total = 0
    for member in want["members"]:
        mid = member["member_id"]
        meta = latest[(5, mid)]
        assert (meta["instanceId"], meta["rackId"], meta["clientId"], meta["clientHost"]) == (
            member["instance_id"], member["rack_id"], member["client_id"], member["client_host"])
        assert meta["subscribedTopicNames"] == member["subscribed_topic_names"]
        assert (meta["subscribedTopicRegex"] or "") == (member["subscribed_topic_regex"] or "")
        current = latest[(8, mid)]
        assert _named(ids, current["assignedPartitions"]) == _described(member["assignment"])
        assert current["partitionsPendingRevocation"] == []
        assert _named(ids, latest[(7, mid)]["topicPartitions"]) == _described(
            member["target_assignment"])
        if mid != "m2":
            assert current["memberEpoch"] == member["member_epoch"]
        total += sum(len(ps) for _, ps in _described(member["assignment"]))
    assert total == 6  # every partition of q, r and rx is owned
    assert latest[(5, "m1")]["serverAssignor"] == "uniform"
    # the static member that left: epoch -2, as Kafka writes it, its own epoch kept beside it
    assert latest[(8, "m2")]["memberEpoch"] == -2
    assert latest[(8, "m2")]["previousMemberEpoch"] == [
        m for m in want["members"] if m["member_id"] == "m2"][0]["member_epoch"]
    for kind in (5, 7, 8):  # the member that left: its records' last word is a tombstone
        assert latest[(kind, "gone")] is None


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
        ids = _topic_ids(broker)
    finally:
        broker.stop()

    latest = _latest(decoder, records, group)

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


def test_kafka_decodes_a_classic_member_of_a_consumer_group(decoder: Decoder) -> None:
    """A classic-protocol member inside a consumer group (online migration) carries Kafka's
    tagged ClassicMemberMetadata: its session timeout and JoinGroup protocols."""
    q = uuid.uuid4()
    member = consumer_records.MemberRecord(
        "c1", None, None, "client", "/h", frozenset({"q"}), None, 60000, None,
        (10000, (("range", b"\x00\x01sub"), ("cooperative-sticky", b""))), 4, 3, False,
        {("q", 0)}, {("q", 1)})
    records = consumer_records.encode(consumer_records.GroupRecords(
        "g", 5, 5, {"q": 2}, {"c1": member}, {"c1": {("q", 0)}}),
        lambda name: q if name == "q" else None)
    decoded = {(d["type"], d["key"].get("memberId", "")): d["value"]
               for d in (decoder.decode(k, v) for k, v in records.items())}
    classic = decoded[(5, "c1")]["classicMemberMetadata"]
    assert classic["sessionTimeoutMs"] == 10000
    assert [(p["name"], base64.b64decode(p["metadata"])) for p in
            classic["supportedProtocols"]] == [("range", b"\x00\x01sub"),
                                               ("cooperative-sticky", b"")]
    current = decoded[(8, "c1")]
    assert (current["memberEpoch"], current["previousMemberEpoch"], current["state"]) == (4, 3, 1)
    assert [t["partitions"] for t in current["partitionsPendingRevocation"]] == [[1]]
    assert decoded[(3, "")]["epoch"] == 5 and decoded[(6, "")]["assignmentEpoch"] == 5
