"""Request steps shared by the differential scenarios: raw requests with Kafka's field names.

Kafka settles some things asynchronously (a topic's leadership reaches the partition manager a
moment after Metadata shows it, the producer-id and group coordinators load on first use); the
steps that set a scene wait for that on both brokers alike, so the scripted requests that follow
meet a settled broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from streams.broker.records import Record, build_batch, decode_records, iter_batches

from .compare import Side

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = 8, 9, 10, 11
HEARTBEAT, SYNC_GROUP, CREATE_TOPICS, DELETE_RECORDS = 12, 14, 19, 21
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 22, 24, 25, 26
TXN_OFFSET_COMMIT, DESCRIBE_CONFIGS, ALTER_CONFIGS = 28, 32, 33
INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE = 44, 47

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
# Answers that mean "not yet, ask again" while a coordinator or a partition comes up.
SETTLING = {"coordinator_load_in_progress", "coordinator_not_available", "not_coordinator",
            "not_leader_or_follower", "leader_not_available", "unknown_topic_or_partition",
            "concurrent_transactions"}


def topic_spec(name: str, partitions: int = 1, replication: int = 1,
               configs: dict[str, str] | None = None,
               assignments: list[list[int]] | None = None) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": replication,
            "assignments": [{"partition_index": i, "broker_ids": ids}
                            for i, ids in enumerate(assignments or [])],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


def create_topics(side: Side, *topics: dict[str, Any], validate_only: bool = False) -> Any:
    return side.call(CREATE_TOPICS, {"topics": list(topics), "timeout": 30000,
                                     "validate_only": validate_only})


def create_topic(side: Side, name: str, partitions: int = 1, **configs: str) -> None:
    """Create a topic and wait until every partition answers ListOffsets (it has a leader)."""
    answer = create_topics(side, topic_spec(name, partitions,
                                            configs={k.replace("_", "."): v
                                                     for k, v in configs.items()}))
    assert answer["topics"][0]["error_code"] == "none", answer
    wait_partitions(side, name, partitions)


def wait_partitions(side: Side, name: str, partitions: int) -> None:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": name, "partitions": [{"partition_index": i, "current_leader_epoch": -1,
                                        "timestamp": LATEST} for i in range(partitions)]}]}
    side.poll(LIST_OFFSETS, body, lambda a: all(
        p["error_code"] == "none" for p in a["topics"][0]["partitions"]))


def records(count: int = 1, key: bytes | None = b"k", size: int = 10,
            timestamp: int = 1_000) -> list[Record]:
    return [Record(key, b"v" * size, timestamp + i) for i in range(count)]


def batch(count: int = 1, **kwargs: Any) -> bytes:
    return build_batch(records(count), **kwargs)


def produce(side: Side, topic: str, data: bytes, partition: int = 0, acks: int = -1,
            transactional_id: str | None = None) -> Any:
    return side.call(PRODUCE, {
        "transactional_id": transactional_id, "acks": acks, "timeout": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                           "records": data}]}]})


def join_group(call: Callable[[int, dict[str, Any]], Any],
               body: dict[str, Any]) -> tuple[Any, str]:
    """JoinGroup through a member's own connection (``call``), asked again while the
    coordinator settles (for 30 s at most) and once more with the handed-out member id after
    MEMBER_ID_REQUIRED; parks until the rebalance completes. Returns the answer and the member
    id to use from now on."""
    answer = call(JOIN_GROUP, body)
    deadline = time.monotonic() + 30
    while answer["error_code"] in SETTLING:
        assert time.monotonic() < deadline, f"JoinGroup still {answer['error_code']} after 30 s"
        time.sleep(0.1)
        answer = call(JOIN_GROUP, body)
    member_id = body["member_id"]
    if answer["error_code"] == "member_id_required":
        member_id = answer["member_id"]
        answer = call(JOIN_GROUP, {**body, "member_id": member_id})
    return answer, member_id


def partition_answer(answer: Any) -> Any:
    """The one partition result of a one-partition Produce/ListOffsets/DeleteRecords answer."""
    topics = answer.get("responses") or answer.get("topics")
    parts = topics[0].get("partition_responses") or topics[0].get("partitions")
    return parts[0]


def init_producer_id(side: Side, transactional_id: str | None = None, timeout_ms: int = 60000,
                     producer_id: int = -1, producer_epoch: int = -1) -> Any:
    """InitProducerId, asked again while the coordinator loads (Kafka loads it on first use)."""
    body = {"transactional_id": transactional_id, "transaction_timeout": timeout_ms,
            "producer_id": producer_id, "producer_epoch": producer_epoch}
    return side.poll(INIT_PRODUCER_ID, body, lambda a: a["error_code"] not in SETTLING)


def find_coordinator(side: Side, key: str, key_type: int = 0) -> Any:
    """FindCoordinator (0 group, 1 transaction), asked again until the coordinator is up."""
    body = {"key_type": key_type, "coordinator_keys": [key]}
    answer = side.poll(FIND_COORDINATOR, body, lambda a: a["coordinators"][0]["error_code"]
                       not in SETTLING)
    if key_type == 0:
        # Kafka names the coordinator before it has loaded the group's partition: wait until
        # the group answers OffsetFetch.
        side.poll(OFFSET_FETCH, {"groups": [{"group_id": key, "member_id": None,
                                             "member_epoch": -1, "topics": None}],
                                 "require_stable": False},
                  lambda a: a["groups"][0]["error_code"] not in SETTLING)
    return answer


def list_offsets(side: Side, topic: str, timestamp: int, partition: int = 0,
                 isolation_level: int = 0) -> Any:
    return side.call(LIST_OFFSETS, {"replica_id": -1, "isolation_level": isolation_level,
                                    "topics": [{"name": topic, "partitions": [
                                        {"partition_index": partition,
                                         "current_leader_epoch": -1,
                                         "timestamp": timestamp}]}]})


def fetch(side: Side, topic: str, offset: int = 0, partition: int = 0,
          isolation_level: int = 0, max_bytes: int = 1 << 20) -> Any:
    """One Fetch that does not wait (max_wait 0): what is there now."""
    return side.call(FETCH, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": max_bytes,
        "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
             "last_fetched_epoch": -1, "log_start_offset": -1,
             "partition_max_bytes": max_bytes}]}],
        "forgotten_topics_data": [], "rack_id": ""})


def fetched(answer: Any) -> Any:
    """A one-partition Fetch answer with its record bytes decoded to comparable entries.

    Batches are listed as (base offset, producer id set?, epoch, sequence, transactional,
    control) and records as (offset, key, value, timestamp): the bytes themselves differ where
    Kafka rewrites a header field that nothing reads (the partition leader epoch).
    """
    part = answer["responses"][0]["partitions"][0]
    data = part.pop("records") or b""
    entries = []
    for pos, header in iter_batches(data):
        raw = data[pos : pos + header.size]
        entries.append({
            "base_offset": header.base_offset, "has_producer": header.producer_id >= 0,
            "epoch": header.producer_epoch, "sequence": header.base_sequence,
            "transactional": header.is_transactional, "control": header.is_control,
            "records": [(header.base_offset + i, r.key, r.value, r.timestamp)
                        for i, r in enumerate(decode_records(raw))],
        })
    part["batches"] = entries
    return answer


def consume(side: Side, topic: str, isolation_level: int = 0, partition: int = 0) -> Any:
    """Fetch from offset 0 until nothing more comes, as a consumer reads.

    A single Fetch may legitimately stop early (Kafka returned one batch of several after
    transaction markers), so what is compared is everything a consumer would read: the last
    answer's offsets, every aborted transaction listed and every batch.
    """
    offset, batches, aborted = 0, [], []
    for _ in range(1000):
        answer = fetched(fetch(side, topic, offset, partition, isolation_level))
        part = answer["responses"][0]["partitions"][0]
        aborted += [a for a in part.pop("aborted_transactions") or [] if a not in aborted]
        new = part.pop("batches")
        if not new:
            break
        batches += new
        offset = new[-1]["records"][-1][0] + 1
    part.update(aborted_transactions=aborted, batches=batches)
    return part
