"""Session seeds for the group protocols of Kafka 4: KIP-848 consumer groups and KIP-932 share
groups, as whole request sequences on one connection.

A single recorded heartbeat or ShareFetch names a member that has long left when the fuzzer
sends it, so a mutation of it only ever reaches "unknown member". A seed here is the whole
conversation instead: join, heartbeat with the epoch the broker answered, commit or acquire,
acknowledge, describe, the share-group offsets admin APIs, leave, delete. The fuzzer replays it
on a fresh group id per case (the id is a fixed-length slot, replaced byte for byte, so no
length field changes) with one frame mutated: the frames before it put a member with a real
epoch, or a share session holding acquired records, in front of the hostile one, and the frames
after it show what the hostile one left behind.

The same sequences, unmutated, are the group oracle: replayed on a fresh group after every
batch of cases, their answers (error codes, epochs, acquired ranges, assignments) must be the
ones of the first replay, or the broker's group state was corrupted.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import socket
import struct
import uuid
from collections.abc import Iterable
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from streams.broker.protocol import build_entity

TOPIC_IDS = "topics"  # the corpus entry ("seq:topics") holding the seeds' topic ids
SHARE_TOPIC = "fzq-share"
CONSUMER_TOPIC = "fzq-consumer"
SHARE_RECORDS = 10  # 5 per partition, one batch each
SLOT_DIGITS = 9
SEQUENCE_PREFIX = "seq:"
_SLOTS = {"share": "fzq-s-", "consumer": "fzq-c-"}
_CLIENT_ID = b"fuzz-seed"
# Answer fields that say what the broker did; the rest (throttle, hosts, ids) may vary.
_KEPT = {"error_code", "acknowledge_error_code", "member_epoch", "group_epoch", "group_state",
         "partition_index", "partitions", "start_offset", "committed_offset", "first_offset",
         "last_offset", "delivery_count", "name", "topic_name"}


def slot(kind: str, index: int | str = 0) -> str:
    """The group id of a sequence: ``fzq-s-000000000`` when recorded, one per fuzz case."""
    return f"{_SLOTS[kind]}{str(index).zfill(SLOT_DIGITS)[-SLOT_DIGITS:]}"


def rename(payload: bytes, kind: str, index: int | str) -> bytes:
    """``payload`` with the recorded group id replaced by the case's (same length)."""
    return payload.replace(slot(kind).encode(), slot(kind, index).encode())


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def request_payload(api_key: int, version: int, correlation_id: int, body: dict[str, Any]
                    ) -> bytes:
    """A request frame without its size prefix, fields Kafka's zero values unless given."""
    request_type = load_request_schema(api_key, version)
    out = io.BytesIO()
    out.write(struct.pack(">hhih", api_key, version, correlation_id, len(_CLIENT_ID)))
    out.write(_CLIENT_ID)
    if request_type.__flexible__:
        out.write(b"\0")
    entity_writer(request_type)(out, build_entity(request_type, body))
    return out.getvalue()


class Connection:
    """A raw connection that sends payloads and decodes the answers as plain dicts."""

    def __init__(self, address: tuple[str, int], timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sent: list[bytes] = []

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        payload = request_payload(api_key, version, len(self.sent) + 1, body)
        return self.send_payload(payload)

    def send_payload(self, payload: bytes) -> dict[str, Any]:
        self.sent.append(payload)
        api_key, version = struct.unpack_from(">hh", payload)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._recv(4))
        frame = self._recv(size)
        response_type = load_response_schema(api_key, version)
        pos = 4 + (1 if response_type.__flexible__ else 0)
        decoded, _ = entity_reader(response_type)(frame, pos)
        return _plain(decoded)

    def _recv(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)


def outcome(answer: Any) -> Any:
    """What an answer says about group state, without the fields that may vary."""
    if isinstance(answer, dict):
        return {k: outcome(v) for k, v in sorted(answer.items())
                if k in _KEPT or isinstance(v, dict | list)}
    if isinstance(answer, list):
        return [outcome(v) for v in answer]
    return answer


# -- the two scripted sessions ------------------------------------------------------------------


def prepare(bootstrap: str) -> None:
    """The seeds' topics, and the share topic's records (one batch each, so acquisitions are
    per record). Not recorded: no fuzz case is a produce to these topics, so the group oracle's
    acquired ranges stay the same all run."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(SHARE_TOPIC, 2, 1),
                                       NewTopic(CONSUMER_TOPIC, 2, 1)],
                                      operation_timeout=10).values():
        future.result(20)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(SHARE_RECORDS):
        producer.produce(SHARE_TOPIC, b"fuzz-share", partition=i % 2)
        assert producer.flush(20) == 0, "the seeds' records were not delivered"


def _topic_id(conn: Connection, topic: str) -> uuid.UUID:
    meta = conn.send(3, 12, {"topics": [{"name": topic, "topic_id": None}],
                             "allow_auto_topic_creation": False})
    return uuid.UUID(meta["topics"][0]["topic_id"])


def _ranges(answer: dict[str, Any]) -> dict[int, list[tuple[int, int]]]:
    return {p["partition_index"]: [(r["first_offset"], r["last_offset"])
                                   for r in p["acquired_records"]]
            for t in answer["responses"] for p in t["partitions"]}


def _acks(ranges: Iterable[tuple[int, int]], kind: int) -> list[dict[str, Any]]:
    return [{"first_offset": a, "last_offset": b, "acknowledge_types": [kind]}
            for a, b in ranges]


def share_session(address: tuple[str, int]) -> list[bytes]:
    """A share member joins, acquires every record, accepts, releases, re-acquires and
    rejects, describes, closes its session, leaves; then the offsets admin APIs and delete."""
    group, member = slot("share"), "fzqShareMember00000001"
    with Connection(address) as c:
        tid = _topic_id(c, SHARE_TOPIC)
        c.sent.clear()
        c.send(44, 1, {"resources": [{"resource_type": 32, "resource_name": group, "configs": [
            {"name": "share.auto.offset.reset", "config_operation": 0,
             "value": "earliest"}]}], "validate_only": False})
        joined = c.send(76, 1, {"group_id": group, "member_id": member, "member_epoch": 0,
                                "subscribed_topic_names": [SHARE_TOPIC]})
        epoch = joined["member_epoch"]
        epoch = c.send(76, 1, {"group_id": group, "member_id": member,
                               "member_epoch": epoch})["member_epoch"]

        def fetch(session_epoch: int, acks: dict[int, list[dict[str, Any]]], wait: int
                  ) -> dict[str, Any]:
            return c.send(78, 1, {
                "group_id": group, "member_id": member, "share_session_epoch": session_epoch,
                "max_wait": wait, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500,
                "batch_size": 500, "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": acks.get(p, [])}
                    for p in (0, 1)]}]})

        first = _ranges(fetch(0, {}, 500))
        p0, p1 = first.get(0, []), first.get(1, [])
        head = [(a, a) for a, _ in p0[:1]]  # the first record accepted, the rest rejected
        rest = [(a + 1, b) for a, b in p0[:1] if b > a] + p0[1:]
        c.send(79, 1, {"group_id": group, "member_id": member, "share_session_epoch": 1,
                       "topics": [{"topic_id": tid, "partitions": [
                           {"partition_index": 0, "acknowledgement_batches": _acks(head, 1)},
                           {"partition_index": 1, "acknowledgement_batches": _acks(p1, 2)}]}]})
        again = _ranges(fetch(2, {0: _acks(rest, 3)}, 100))
        c.send(77, 1, {"group_ids": [group], "include_authorized_operations": True})
        c.send(90, 1, {"groups": [{"group_id": group, "topics": None}]})
        fetch(-1, {1: _acks(again.get(1, []), 1)}, 0)
        c.send(76, 1, {"group_id": group, "member_id": member, "member_epoch": -1})
        c.send(90, 1, {"groups": [{"group_id": group, "topics": [
            {"topic_name": SHARE_TOPIC, "partitions": [0, 1]}]}]})
        c.send(91, 0, {"group_id": group, "topics": [{"topic_name": SHARE_TOPIC, "partitions": [
            {"partition_index": 0, "start_offset": 1}]}]})
        c.send(92, 0, {"group_id": group, "topics": [{"topic_name": SHARE_TOPIC}]})
        c.send(42, 2, {"groups_names": [group]})
        return list(c.sent)


def consumer_session(address: tuple[str, int]) -> list[bytes]:
    """A KIP-848 member joins, heartbeats with its epoch and owned partitions until assigned,
    commits and fetches offsets under its epoch, is described, leaves; the group is deleted."""
    group, member = slot("consumer"), "fzqConsumerMember00001"
    with Connection(address) as c:
        c.sent.clear()
        answer = c.send(68, 1, {"group_id": group, "member_id": member, "member_epoch": 0,
                                "rebalance_timeout": 30_000,
                                "subscribed_topic_names": [CONSUMER_TOPIC],
                                "topic_partitions": []})
        owned: list[dict[str, Any]] = []
        for _ in range(2):
            epoch = answer["member_epoch"]
            assignment = answer.get("assignment")
            if assignment:
                owned = [{"topic_id": uuid.UUID(t["topic_id"]), "partitions": t["partitions"]}
                         for t in assignment["topic_partitions"]]
            answer = c.send(68, 1, {"group_id": group, "member_id": member,
                                    "member_epoch": epoch, "topic_partitions": owned})
        epoch = answer["member_epoch"]
        c.send(8, 9, {"group_id": group, "generation_id_or_member_epoch": epoch,
                      "member_id": member, "topics": [{"name": CONSUMER_TOPIC, "partitions": [
                          {"partition_index": 0, "committed_offset": 3}]}]})
        c.send(9, 9, {"groups": [{"group_id": group, "member_id": member,
                                  "member_epoch": epoch, "topics": None}]})
        c.send(69, 1, {"group_ids": [group], "include_authorized_operations": True})
        c.send(68, 1, {"group_id": group, "member_id": member, "member_epoch": -1})
        c.send(42, 2, {"groups_names": [group]})
        return list(c.sent)


SESSIONS = {"share": share_session, "consumer": consumer_session}


def topic_ids(address: tuple[str, int]) -> bytes:
    """The seeds' topics as ``name=hex-id`` lines: recorded with the corpus, so a corpus used
    again on a fresh broker can have its frames' topic ids replaced (``with_topic_ids``)."""
    with Connection(address) as c:
        return "\n".join(f"{t}={_topic_id(c, t).hex}"
                         for t in (SHARE_TOPIC, CONSUMER_TOPIC)).encode()


def with_topic_ids(frames: list[bytes], recorded: bytes, current: bytes) -> list[bytes]:
    """``frames`` with each recorded topic id (16 raw bytes) replaced by the current one."""
    now = dict(line.split("=") for line in current.decode().splitlines())
    pairs = [(bytes.fromhex(old), bytes.fromhex(now[name]))
             for name, old in (line.split("=") for line in recorded.decode().splitlines())
             if name in now]
    out = []
    for frame in frames:
        for old, new in pairs:
            frame = frame.replace(old, new)
        out.append(frame)
    return out


def replay(address: tuple[str, int], kind: str, frames: list[bytes], index: str
           ) -> list[Any]:
    """The unmutated sequence on a fresh group: what each answer says (see ``outcome``)."""
    with Connection(address) as c:
        return [outcome(c.send_payload(rename(f, kind, index))) for f in frames]
