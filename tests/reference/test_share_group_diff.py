"""KIP-932 share-group APIs, the same request sequence to our broker and to Apache Kafka 4.4.

ShareGroupHeartbeat (join, assignment, bad epochs, unknown members and groups, a classic
group's id), ShareFetch and ShareAcknowledge (session epochs, acknowledgements of offsets never
acquired, before the start offset, bad acknowledge types, a classic group's id): error codes
and messages must match; member epochs are compared only as "positive". The sequence runs with
ShareFetch/ShareAcknowledge v1 and v2 (Kafka 4.4 offers both); v2 adds its own steps: the
record_limit acquire mode (KIP-1206), renew acknowledgements (KIP-1222) and their refusals.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import EmbeddedBroker, create_topics

from . import kafka
from .wire import Connection

HEARTBEAT, DESCRIBE, FETCH, ACK, METADATA, FIND_COORDINATOR, OFFSET_COMMIT = 76, 77, 78, 79, 3, 10, 8
INCREMENTAL_ALTER_CONFIGS = 44
RETRIABLE = ("not_coordinator", "coordinator_load_in_progress")


def _script(bootstrap: str, tag: str, version: int) -> dict[str, Any]:
    """The request sequence, with ShareFetch and ShareAcknowledge at ``version``."""
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
            answer = c.send(FETCH, version, {
                "group_id": group, "member_id": member, "share_session_epoch": epoch,
                "max_wait": wait, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500,
                "batch_size": 500, "forgotten_topics_data": [],
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": acks or []}]}]})
            assert answer is not None
            return answer["error_code"], answer["error_message"], [
                (p["partition_index"], p["error_code"], p["error_message"],
                 p["acknowledge_error_code"], p["acknowledge_error_message"],
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
            answer = c.send(ACK, version, {"group_id": share, "member_id": "m1",
                                     "share_session_epoch": epoch, "topics": [
                                         {"topic_id": tid, "partitions": [
                                             {"partition_index": 0,
                                              "acknowledgement_batches": acks}]}]})
            assert answer is not None
            return answer["error_code"], answer["error_message"], [
                (p["partition_index"], p["error_code"], p["error_message"])
                for t in answer["responses"] for p in t["partitions"]]

        out["reject_before_start"] = acknowledge(4, ack(2, 2, 3))
        out["bad_ack_type"] = acknowledge(5, ack(3, 3, 7))
        out["ack_epoch_zero"] = acknowledge(0, ack(3, 3, 1))
        out["ack_bad_epoch"] = acknowledge(9, [])
        out["ack_final"] = acknowledge(-1, ack(3, 4, 1))
        if version >= 2:
            out.update(_v2_steps(c, bootstrap, tag, tid, topic, hb))
    return out


def _v2_steps(c: Connection, bootstrap: str, tag: str, tid: uuid.UUID, topic: str,
              hb: Any) -> dict[str, Any]:
    """ShareFetch/ShareAcknowledge v2 only: acquire modes and renewals, on a group reading
    from the earliest offset of a partition holding two batches of 5 records, then 5 batches
    of one record."""
    group = f"sg2-{tag}"
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for _ in range(5):
        producer.produce(topic, b"b", partition=0)
    producer.flush()
    for _ in range(5):
        producer.produce(topic, b"s", partition=0)
        producer.flush()
    c.send(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
        "resource_type": 32, "resource_name": group, "configs": [
            {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
        "validate_only": False})
    deadline = time.monotonic() + 30
    answer = hb(group, "m1", 0, [topic])
    while answer["error_code"] in RETRIABLE and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = hb(group, "m1", 0, [topic])
    epoch = answer["member_epoch"]
    deadline = time.monotonic() + 15
    while not (answer.get("assignment") or {}).get("topic_partitions"):
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.2)
        answer = hb(group, "m1", epoch)
        epoch = answer["member_epoch"]

    def fetch(epoch: int, acks: list[dict[str, Any]] | None = None, mode: int = 0,
              renew: bool = False, records: int = 2, wait: int = 500) -> tuple[Any, ...]:
        quiet = renew and not records  # a renewing fetch asks for nothing
        answer = c.send(FETCH, 2, {
            "group_id": group, "member_id": "m1", "share_session_epoch": epoch,
            "max_wait": 0 if quiet else wait, "min_bytes": 0 if quiet else 1,
            "max_bytes": 0 if quiet else 1 << 20, "max_records": records, "batch_size": 500,
            "share_acquire_mode": mode, "is_renew_ack": renew, "forgotten_topics_data": [],
            "topics": [{"topic_id": tid, "partitions": [
                {"partition_index": 0, "acknowledgement_batches": acks or []}]}]})
        assert answer is not None
        return answer["error_code"], answer["error_message"], [
            (p["partition_index"], p["error_code"], p["error_message"],
             p["acknowledge_error_code"], p["acknowledge_error_message"],
             p["acquired_records"]) for t in answer["responses"] for p in t["partitions"]]

    def acknowledge(epoch: int, acks: list[dict[str, Any]], renew: bool,
                    version: int = 2) -> tuple[Any, ...]:
        body = {"group_id": group, "member_id": "m1", "share_session_epoch": epoch,
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": acks}]}]}
        if version >= 2:
            body["is_renew_ack"] = renew
        answer = c.send(ACK, version, body)
        assert answer is not None
        return answer["error_code"], answer["error_message"], [
            (p["partition_index"], p["error_code"], p["error_message"])
            for t in answer["responses"] for p in t["partitions"]]

    def ack(first: int, last: int, *kinds: int) -> list[dict[str, Any]]:
        return [{"first_offset": first, "last_offset": last, "acknowledge_types": list(kinds)}]

    start = 0  # the v1 steps' 5 records (one batch), then this step's 5 + 5 x 1
    out: dict[str, Any] = {}
    out["v2_bad_mode"] = fetch(0, mode=5)
    out["v2_renew_asking"] = fetch(0, renew=True)
    out["v2_renew_open"] = fetch(0, renew=True, records=0)
    out["v2_record_limit"] = fetch(0, mode=1)  # 2 of the 5-record batch
    out["v2_batch_optimized"] = fetch(1)  # the rest of that batch
    out["v2_ack_renew"] = acknowledge(2, ack(start, start + 1, 4), renew=True)
    out["v2_ack_renew_unflagged"] = acknowledge(3, ack(start, start + 1, 4), renew=False)
    out["v2_ack_renew_in_v1"] = acknowledge(4, ack(start, start + 1, 4), renew=False, version=1)
    out["v2_ack_renew_past_acquired"] = acknowledge(5, ack(start + 8, start + 9, 4), renew=True)
    out["v2_ack_accept_past_acquired"] = acknowledge(6, ack(start + 4, start + 5, 1), renew=False)
    out["v2_ack_mixed"] = acknowledge(7, ack(start, start + 1, 1, 4), renew=True)
    out["v2_ack_accept_flagged"] = acknowledge(8, ack(start + 2, start + 2, 1), renew=True)
    out["v2_ack_renew_accepted"] = acknowledge(9, ack(start, start, 4), renew=True)
    out["v2_fetch_renew"] = fetch(10, ack(start + 3, start + 3, 4), renew=True, records=0)
    out["v2_fetch_renew_accept"] = fetch(11, ack(start + 3, start + 3, 1), renew=True, records=0)
    out["v2_fetch_renew_unflagged"] = fetch(12, ack(start + 4, start + 4, 4))
    out["v2_record_limit_rest"] = fetch(13, mode=1, records=3)
    out["v2_bad_mode_in_session"] = fetch(14, ack(start + 1, start + 1, 1), mode=9)
    out["v2_after_bad_mode"] = fetch(15, ack(start + 1, start + 1, 1))
    out["v2_fetch_past_acquired"] = fetch(16, ack(start + 14, start + 16, 1), wait=0)

    def renew_enabled(value: str) -> Any:
        answer = c.send(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": 32, "resource_name": group, "configs": [
                {"name": "share.renew.acknowledge.enable", "config_operation": 0,
                 "value": value}]}], "validate_only": False})
        assert answer is not None
        return [r["error_code"] for r in answer["responses"]]

    # share.renew.acknowledge.enable=false (KIP-1222): RENEW refused, other types still taken
    out["v2_renew_disable"] = renew_enabled("false")
    out["v2_ack_renew_disabled"] = acknowledge(17, ack(start + 13, start + 13, 4), renew=True)
    out["v2_fetch_renew_disabled"] = fetch(18, ack(start + 13, start + 13, 4), renew=True,
                                           records=0)
    out["v2_ack_renew_disabled_before_start"] = acknowledge(19, ack(start, start, 4), renew=True)
    out["v2_renew_enable"] = renew_enabled("true")
    out["v2_ack_renew_enabled_again"] = acknowledge(20, ack(start + 13, start + 13, 4),
                                                    renew=True)
    # malformed acknowledgement batches: last offset before the first, a type count that is
    # neither 1 nor the batch's length
    out["v2_ack_backwards"] = acknowledge(21, ack(start + 13, start + 12, 1), renew=False)
    out["v2_ack_type_count"] = acknowledge(22, ack(start + 12, start + 14, 1, 1), renew=False)
    out["v2_fetch_backwards"] = fetch(23, ack(start + 13, start + 12, 1), wait=0)
    out["v2_ack_overlapping"] = acknowledge(
        24, ack(start + 12, start + 13, 1) + ack(start + 13, start + 14, 1), renew=False)
    out["v2_ack_unordered"] = acknowledge(
        25, ack(start + 14, start + 14, 1) + ack(start + 12, start + 12, 1), renew=False)
    # whether the overlapping request's first batch was applied (it was refused as a whole)
    out["v2_ack_after_overlap"] = acknowledge(26, ack(start + 12, start + 12, 1), renew=False)
    out["v2_final"] = fetch(-1, ack(start, start + 9, 1), wait=0)
    return out


@pytest.mark.parametrize("version", [1, 2])
def test_share_group_request_sequences_match_kafka(
    reference_kafka: kafka.KafkaNode, bundled: EmbeddedBroker, version: int
) -> None:
    tag = uuid.uuid4().hex[:8]
    theirs = _script(reference_kafka.bootstrap, tag, version)
    ours = _script(bundled.bootstrap, tag, version)
    for answers in (ours, theirs):
        _settle_racing_ack(answers)
    for key in theirs:
        assert ours.get(key) == theirs[key], key
    assert ours == theirs


def _settle_racing_ack(answers: dict[str, Any]) -> None:
    """Kafka 4.4 applies the acknowledgements of a ShareFetch that fails on its acquire mode
    asynchronously, so re-acknowledging the same offset in the next request answers 0 or
    INVALID_RECORD_STATE (121) depending on whether that has finished (seen both ways, about
    one run in four), with Kafka's message for 121. Either is correct; anything else is still a
    difference."""
    step = answers.get("v2_after_bad_mode")
    if step is None:
        return
    error, message, partitions = step
    settled = []
    for index, code, part_message, ack_code, ack_message, acquired in partitions:
        assert (ack_code, ack_message) in (
            (0, None),
            (121, "The offset cannot be acknowledged. The offset is not acquired.")), (
            f"v2_after_bad_mode acknowledge error {ack_code}: {ack_message}")
        settled.append((index, code, part_message, "0 or 121", "(its message)", acquired))
    answers["v2_after_bad_mode"] = (error, message, settled)
