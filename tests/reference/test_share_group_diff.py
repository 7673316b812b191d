"""KIP-932 share-group APIs, the same request sequence to our broker and to Apache Kafka 4.4.

ShareGroupHeartbeat (join, assignment, bad epochs, unknown members and groups, a classic
group's id), ShareFetch and ShareAcknowledge (session epochs, acknowledgements of offsets never
acquired, before the start offset, bad acknowledge types, a classic group's id): error codes
and messages must match; member epochs are compared only as "positive".
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Producer
from helpers import EmbeddedBroker, create_topics

from . import kafka
from .wire import Connection

HEARTBEAT, DESCRIBE, FETCH, ACK, METADATA, FIND_COORDINATOR, OFFSET_COMMIT = 76, 77, 78, 79, 3, 10, 8
RETRIABLE = ("not_coordinator", "coordinator_load_in_progress")


def _script(bootstrap: str, tag: str) -> dict[str, Any]:
    topic, share, classic = f"q-{tag}", f"sg-{tag}", f"cg-{tag}"
    create_topics(bootstrap, {topic: 1})
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(5):
        producer.produce(topic, b"x", partition=0)
    producer.flush()
    out: dict[str, Any] = {}
    with Connection(bootstrap) as c:
        meta = c.send(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                     "allow_auto_topic_creation": False})
        assert meta is not None
        tid = uuid.UUID(str(meta["topics"][0]["topic_id"]))

        def hb(group: str, member: str, epoch: int, topics: list[str] | None = None
               ) -> dict[str, Any]:
            answer = c.send(HEARTBEAT, 1, {"group_id": group, "member_id": member,
                                           "member_epoch": epoch,
                                           "subscribed_topic_names": topics})
            assert answer is not None
            return answer

        for group in (share, classic):
            c.send(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        deadline = time.monotonic() + 30
        answer = hb(share, "m1", 0, [topic])
        while answer["error_code"] in RETRIABLE and time.monotonic() < deadline:
            time.sleep(0.2)
            answer = hb(share, "m1", 0, [topic])
        out["join"] = (answer["error_code"], answer["member_epoch"] > 0)
        epoch = answer["member_epoch"]
        deadline = time.monotonic() + 15
        while not (answer.get("assignment") or {}).get("topic_partitions"):
            assert time.monotonic() < deadline, "no assignment"
            time.sleep(0.2)
            answer = hb(share, "m1", epoch)
            epoch = answer["member_epoch"]
        out["assigned"] = [(str(t["topic_id"]) == str(tid), t["partitions"])
                           for t in answer["assignment"]["topic_partitions"]]

        def code(answer: dict[str, Any]) -> tuple[Any, Any]:
            return answer["error_code"], answer.get("error_message")

        described = c.send(DESCRIBE, 1, {"group_ids": [share, classic, f"none-{tag}"],
                                   "include_authorized_operations": False})
        assert described is not None
        out["describe"] = sorted([
            (g["group_id"].replace(tag, "TAG"), g["error_code"],
             (g["error_message"] or "").replace(tag, "TAG"), g["group_state"],
             g["assignor_name"], [(m["member_id"], m["subscribed_topic_names"],
                                   [(t["topic_name"].replace(tag, "TAG"), t["partitions"])
                                    for t in m["assignment"]["topic_partitions"]])
                                  for m in g["members"]])
            for g in described["groups"]])  # Kafka answers in coordinator-shard order
        out["empty_member"] = code(hb(share, "", 0, [topic]))
        out["no_topics"] = code(hb(share, "m2", 0))
        fenced = hb(share, "m1", epoch + 5)
        out["fenced"] = (fenced["error_code"], (fenced["error_message"] or "")[:50])
        out["unknown_member"] = code(hb(share, "zz", 3))
        out["unknown_group"] = code(hb(f"none-{tag}", "zz", 3))
        c.send(OFFSET_COMMIT, 8, {"group_id": classic, "generation_id_or_member_epoch": -1,
                                  "member_id": "", "topics": [{"name": topic, "partitions": [
                                      {"partition_index": 0, "committed_offset": 1}]}]})
        out["classic_heartbeat"] = code(hb(classic, "m1", 0, [topic]))
        classic_described = c.send(DESCRIBE, 1, {"group_ids": [classic],
                                                 "include_authorized_operations": False})
        assert classic_described is not None
        out["describe_classic"] = [(g["error_code"], (g["error_message"] or "").replace(tag, "T"))
                                   for g in classic_described["groups"]]

        def fetch(group: str, member: str, epoch: int, acks: list[dict[str, Any]] | None = None,
                  wait: int = 0) -> tuple[Any, ...]:
            answer = c.send(FETCH, 1, {
                "group_id": group, "member_id": member, "share_session_epoch": epoch,
                "max_wait": wait, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500,
                "batch_size": 500, "forgotten_topics_data": [],
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": acks or []}]}]})
            assert answer is not None
            return answer["error_code"], [
                (p["partition_index"], p["error_code"], p["acknowledge_error_code"],
                 p["acquired_records"]) for t in answer["responses"] for p in t["partitions"]]

        def ack(first: int, last: int, kind: int) -> list[dict[str, Any]]:
            return [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]

        # Kafka answers these two without the partition or with it (an error for the classic
        # id), depending on how far its asynchronous state read got: top-level codes only.
        out["fetch_classic_group"] = fetch(classic, "m1", 0)[0]
        out["fetch_unknown_member"] = fetch(share, "nobody", 0)[0]
        out["fetch_no_session"] = fetch(share, "m1", 3)
        out["fetch_open"] = fetch(share, "m1", 0, wait=500)
        out["ack_beyond_end"] = fetch(share, "m1", 1, ack(100, 100, 1))
        out["ack_before_start"] = fetch(share, "m1", 2, ack(0, 1, 1))
        out["ack_before_start_again"] = fetch(share, "m1", 3, ack(0, 0, 1))
        out["fetch_bad_epoch"] = fetch(share, "m1", 7)

        def acknowledge(epoch: int, acks: list[dict[str, Any]]) -> tuple[Any, ...]:
            answer = c.send(ACK, 1, {"group_id": share, "member_id": "m1",
                                     "share_session_epoch": epoch, "topics": [
                                         {"topic_id": tid, "partitions": [
                                             {"partition_index": 0,
                                              "acknowledgement_batches": acks}]}]})
            assert answer is not None
            return answer["error_code"], [(p["partition_index"], p["error_code"])
                                          for t in answer["responses"] for p in t["partitions"]]

        out["reject_before_start"] = acknowledge(4, ack(2, 2, 3))
        out["bad_ack_type"] = acknowledge(5, ack(3, 3, 7))
        out["ack_epoch_zero"] = acknowledge(0, ack(3, 3, 1))
        out["ack_bad_epoch"] = acknowledge(9, [])
        out["ack_final"] = acknowledge(-1, ack(3, 4, 1))
    return out


def test_share_group_request_sequences_match_kafka(
    reference_kafka: kafka.KafkaNode, bundled: EmbeddedBroker
) -> None:
    tag = uuid.uuid4().hex[:8]
    theirs = _script(reference_kafka.bootstrap, tag)
    ours = _script(bundled.bootstrap, tag)
    assert ours == theirs
