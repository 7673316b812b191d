"""The produce path refuses what a hostile client sends.

Raw Produce frames carry control batches, forged transaction markers, batches whose CRC is right
but whose records are garbage, decompression bombs; a full disk is injected at the segment write.
Each gets Kafka's error code (with per-record errors where the Produce version has them), nothing
bad reaches the log, and well-behaved clients keep working.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import io
import logging
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import crc32c
import pytest
import zstandard
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import BrokerProcess, EmbeddedBroker
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from streams.broker.protocol import build_entity, request_is_flexible
from streams.broker.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    Record,
    build_batch,
    build_control_batch,
    patch_base_offset,
    validate_produced,
    write_varint,
)
from streams.broker.storage.log import LogConfig, PartitionLog
from streams.broker.storage.segment import Segment

NONE = 0
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
KAFKA_STORAGE_ERROR = 56
INVALID_RECORD = 87
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
WRITE_TXN_MARKERS = 27


# -- a raw Kafka client ---------------------------------------------------------------------------


class RawClient:
    """One connection sending Kafka requests built with kio and reading responses in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.correlation = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation, api key, version)

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        self.correlation += 1
        schema = load_request_schema(api_key, version)
        out = io.BytesIO()
        entity_writer(schema)(out, build_entity(schema, body))
        head = struct.pack(">hhih", api_key, version, self.correlation, 3) + b"raw"
        if request_is_flexible(api_key, version):
            head += b"\0"
        payload = head + out.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        self.pending.append((self.correlation, api_key, version))

    def receive(self) -> Any:
        correlation, api_key, version = self.pending.pop(0)
        (size,) = struct.unpack(">i", self._read(4))
        frame = self._read(size)
        assert struct.unpack_from(">i", frame)[0] == correlation
        pos = 5 if request_is_flexible(api_key, version) and api_key != 18 else 4
        entity, _ = entity_reader(load_response_schema(api_key, version))(frame, pos)
        return entity

    def _read(self, n: int) -> bytes:
        chunks = b""
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks += chunk
        return chunks

    def produce(self, topic: str, records: bytes, version: int = 9, partition: int = 0,
                transactional_id: str | None = None) -> Any:
        """One partition's Produce result (acks=all)."""
        self.send(0, version, produce_body(topic, records, partition, transactional_id))
        return self.receive().responses[0].partition_responses[0]


def produce_body(topic: str, records: bytes, partition: int = 0,
                 transactional_id: str | None = None) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "acks": -1, "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]}


def create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(15)


def end_offset(broker: EmbeddedBroker, topic: str, partition: int = 0) -> int:
    return broker.call(lambda: broker.broker.topics.partition(topic, partition).next_offset)


def consume(bootstrap: str, topic: str, expected: int, isolation: str = "read_uncommitted",
            timeout: float = 20.0, start: int = 0) -> list[tuple[int, bytes | None]]:
    """(offset, value) of ``expected`` records of partition 0 from offset ``start``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hostile-reader",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([CTopicPartition(topic, 0, start)])
    out: list[tuple[int, bytes | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                out.append((msg.offset(), msg.value()))
        return out
    finally:
        consumer.close()


def with_crc(records: bytes, count: int, last_offset_delta: int | None = None,
             attributes: int = 0) -> bytes:
    """A batch whose header says ``count`` records and whose CRC is right for ``records``."""
    tail = struct.pack(">hiqqqhii", attributes,
                       count - 1 if last_offset_delta is None else last_offset_delta,
                       1000, 1000, -1, -1, -1, count) + records
    length = 4 + 1 + 4 + len(tail)
    return struct.pack(">qiibI", 0, length, 0, 2, crc32c.crc32c(tail)) + tail


def raw_record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(b"\0")
    write_varint(body, 0)
    write_varint(body, offset_delta)
    for part in (key, value):
        write_varint(body, -1 if part is None else len(part))
        body += part or b""
    write_varint(body, 0)
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


# -- item 1: control batches from clients ---------------------------------------------------------


def test_client_control_batch_is_refused_and_restart_is_clean(broker) -> None:
    create(broker.bootstrap, "ctl")
    client = RawClient(broker.port)
    try:
        ok = client.produce("ctl", build_batch([Record(b"k", b"v", 1000)]))
        assert ok.error_code == NONE
        marker = build_control_batch(123, 0, commit=True, timestamp=1000)
        # As Kafka: a transactional batch (a marker is one) without a transactional id fails
        # the transactional id's authorization first; with one, record validation refuses it.
        assert client.produce("ctl", marker).error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        result = client.produce("ctl", marker, transactional_id="ctl-txn")
        assert result.error_code == INVALID_RECORD
        assert "control" in (result.error_message or "").lower()
        # A control-flagged batch whose record is not even a marker (the crash seen in the field).
        junk = build_batch([Record(b"x", b"y", 1000)], attributes=ATTR_CONTROL)
        assert client.produce("ctl", junk, version=7).error_code == INVALID_RECORD
    finally:
        client.close()
    assert end_offset(broker, "ctl") == 1
    broker.restart()
    assert end_offset(broker, "ctl") == 1
    assert consume(broker.bootstrap, "ctl", 1) == [(0, b"v")]


def test_broker_starts_with_an_unreadable_control_batch_on_disk(tmp_path: Path, caplog) -> None:
    """Rebuilding producer state skips a control record it cannot read, with one warning."""
    broker = EmbeddedBroker(tmp_path / "data").start()
    try:
        create(broker.bootstrap, "bad-ctl")
        client = RawClient(broker.port)
        assert client.produce("bad-ctl", build_batch([Record(b"k", b"a", 1000)])).error_code == 0
        client.close()
    finally:
        broker.stop()
    # Written through the storage layer: a control batch whose key is one byte long.
    plog = PartitionLog(tmp_path / "data" / "bad-ctl-0", LogConfig())
    plog.open()
    bad = bytearray(build_batch([Record(b"x", b"", 1000)], producer_id=7, producer_epoch=0,
                                attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL))
    [(pos, header)] = validate_produced(bytes(bad))
    patch_base_offset(bad, pos, plog.next_offset)
    plog.active.append(bad, [(pos, dataclasses.replace(header, base_offset=plog.next_offset))])
    plog.close()

    caplog.set_level(logging.WARNING)
    broker.start()
    try:
        warnings = [r for r in caplog.records if "control" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
        client = RawClient(broker.port)
        result = client.produce("bad-ctl", build_batch([Record(b"k", b"b", 1000)]))
        client.close()
        assert (result.error_code, result.base_offset) == (NONE, 2)
        # (librdkafka stops at the unreadable marker itself, as it would on any broker.)
        assert consume(broker.bootstrap, "bad-ctl", 1) == [(0, b"a")]
        assert consume(broker.bootstrap, "bad-ctl", 1, start=2) == [(2, b"b")]
    finally:
        broker.stop()


# -- item 2: forged transaction markers ----------------------------------------------------------


def test_forged_commit_marker_does_not_expose_an_open_transaction(broker) -> None:
    create(broker.bootstrap, "forge")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "victim"})
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("forge", key=b"k", value=f"open-{i}".encode())
    producer.flush(15)
    pid, epoch = broker.call(lambda: (broker.broker.transactions.txns["victim"].producer_id,
                                      broker.broker.transactions.txns["victim"].producer_epoch))
    lso = broker.call(lambda: broker.broker.topics.partition("forge", 0).last_stable_offset)
    assert lso == 0

    client = RawClient(broker.port)
    try:
        for commit in (True, False):
            marker = build_control_batch(pid, epoch, commit=commit, timestamp=1000)
            assert client.produce("forge", marker).error_code \
                == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert client.produce("forge", marker, transactional_id="victim").error_code \
                == INVALID_RECORD
        # WriteTxnMarkers is broker-to-broker: a client cannot even find it.
        client.send(18, 3, {"client_software_name": "raw", "client_software_version": "1"})
        keys = {k.api_key for k in client.receive().api_keys}
        assert 0 in keys and WRITE_TXN_MARKERS not in keys
    finally:
        client.close()
    lso = broker.call(lambda: broker.broker.topics.partition("forge", 0).last_stable_offset)
    assert lso == 0, "a forged marker moved the last stable offset"
    assert end_offset(broker, "forge") == 3

    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce("forge", key=b"k", value=b"after")
    producer.commit_transaction(15)
    committed = consume(broker.bootstrap, "forge", 1, isolation="read_committed")
    assert [v for _, v in committed] == [b"after"]
    # Nothing else shows up behind it: the aborted records stay hidden.
    more = consume(broker.bootstrap, "forge", 2, isolation="read_committed", timeout=2)
    assert [v for _, v in more] == [b"after"]


# -- item 3: record validation (LogValidator) ----------------------------------------------------


def test_garbage_records_with_a_good_crc_are_refused_with_record_errors(broker) -> None:
    create(broker.bootstrap, "garbage")
    good = raw_record(0, b"k", b"v")
    cases = {
        "junk-record": with_crc(b"\x10" + b"\xff" * 8, 1),
        "count-larger-than-records": with_crc(good + raw_record(1, b"k", b"v"), 3),
        "trailing-bytes": with_crc(good + b"\x00\x01", 1),
        "offset-deltas-out-of-order": with_crc(raw_record(1, b"k", b"v") + raw_record(
            0, b"k", b"v"), 2),
        "last-offset-delta-not-count-minus-one": with_crc(good, 1, last_offset_delta=5),
        "record-length-past-the-batch": with_crc(b"\x7e" + good[1:], 1),
        "negative-header-count": with_crc(b"\x0e\x00\x00\x00\x01\x01\x01\x01", 1),
    }
    client = RawClient(broker.port)
    try:
        for name, batch in cases.items():
            result = client.produce("garbage", batch)
            assert result.error_code == INVALID_RECORD, name
            assert result.error_message, name
            v7 = client.produce("garbage", batch, version=7)
            assert v7.error_code == INVALID_RECORD, name
        junk = client.produce("garbage", cases["junk-record"])
        assert [e.batch_index for e in junk.record_errors] == [0]
        assert junk.record_errors[0].batch_index_error_message
        # The same checks inside a compressed batch.
        bad_inner = gzip.compress(b"\x10" + b"\xff" * 8 + good)
        assert client.produce("garbage", with_crc(bad_inner, 2, attributes=1)) \
            .error_code == INVALID_RECORD
        assert client.produce("garbage", with_crc(b"not gzip", 2, attributes=1)) \
            .error_code == CORRUPT_MESSAGE
        # Good batches of every codec (headers, null keys and values) still go in.
        for codec in range(5):
            batch = build_batch([Record(b"k", b"v" * 50, 1000, (("h", b"x"), ("n", None))),
                                 Record(None, None, 1001)], attributes=codec)
            assert client.produce("garbage", batch).error_code == NONE, codec
    finally:
        client.close()
    assert end_offset(broker, "garbage") == 10


def test_compacted_topic_refuses_keyless_records_with_their_indexes(broker) -> None:
    create(broker.bootstrap, "compacted", **{"cleanup.policy": "compact"})
    batch = build_batch([Record(b"a", b"1", 1000), Record(None, b"2", 1000),
                         Record(b"c", b"3", 1000), Record(None, b"4", 1000)], attributes=4)
    client = RawClient(broker.port)
    try:
        result = client.produce("compacted", batch)
        assert result.error_code == INVALID_RECORD
        assert [e.batch_index for e in result.record_errors] == [1, 3]
        assert all("without key" in e.batch_index_error_message for e in result.record_errors)
        assert "record errors" in result.error_message
    finally:
        client.close()
    assert end_offset(broker, "compacted") == 0


# -- item 4: decompression bombs -----------------------------------------------------------------


def zstd_bomb(size: int = 1 << 30) -> bytes:
    """A zstd frame of ``size`` zero bytes (about 32 KB), without a content size in its header."""
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    chunk = bytes(1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(size >> 20)) + compressor.flush()


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.slow
def test_zstd_bomb_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        for topic, policy in (("bomb-delete", "delete"), ("bomb-compact", "compact")):
            create(proc.bootstrap, topic, **{"cleanup.policy": policy})
        create(proc.bootstrap, "bystander")
        assert proc.proc is not None
        before = vm_hwm_kib(proc.proc.pid)
        bomb = with_crc(zstd_bomb(), 1000, attributes=4)
        assert len(bomb) < 64 * 1024

        bomber = RawClient(proc.port)
        for i in range(8):
            bomber.send(0, 9, produce_body("bomb-compact" if i % 2 else "bomb-delete", bomb))
        # A well-behaved client's round trip completes while the bombs are handled.
        done = threading.Event()

        def round_trip() -> None:
            producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 0})
            producer.produce("bystander", value=b"still here")
            assert producer.flush(30) == 0
            assert consume(proc.bootstrap, "bystander", 1) == [(0, b"still here")]
            done.set()

        bystander = threading.Thread(target=round_trip, daemon=True)
        bystander.start()
        results = [bomber.receive().responses[0].partition_responses[0] for _ in range(8)]
        bomber.close()
        bystander.join(60)
        assert done.is_set()
        for result in results:
            assert result.error_code in (MESSAGE_TOO_LARGE, INVALID_RECORD), result
            assert "decompress" in result.error_message
        growth_mib = (vm_hwm_kib(proc.proc.pid) - before) / 1024
        assert growth_mib < 300, f"broker peak RSS grew by {growth_mib:.0f} MiB"
    finally:
        proc.stop()


# -- item 6: full disk ---------------------------------------------------------------------------


def test_full_disk_answers_storage_error_and_recovers(broker, monkeypatch, caplog) -> None:
    create(broker.bootstrap, "full")
    create(broker.bootstrap, "roomy")
    disk_full = threading.Event()
    original = Segment.append

    def append(self: Segment, data: Any, headers: Any) -> None:
        if disk_full.is_set() and self.directory.name == "full-0":
            raise OSError(errno.ENOSPC, "No space left on device")
        original(self, data, headers)

    monkeypatch.setattr(Segment, "append", append)
    client = RawClient(broker.port)
    try:
        assert client.produce("full", build_batch([Record(b"k", b"before", 1000)])).error_code \
            == NONE
        caplog.set_level(logging.INFO, logger="streams.broker")
        since = len(caplog.records)
        disk_full.set()
        for _ in range(5):
            result = client.produce("full", build_batch([Record(b"k", b"lost", 1000)]))
            assert result.error_code == KAFKA_STORAGE_ERROR
            assert "space" in result.error_message
            assert client.produce("roomy", build_batch([Record(b"k", b"v", 1000)])) \
                .error_code == NONE
        # Reads keep working while writes fail.
        assert consume(broker.bootstrap, "full", 1) == [(0, b"before")]
        lines = [r for r in caplog.records[since:] if r.levelno >= logging.WARNING]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert not any(r.exc_info for r in caplog.records[since:])

        disk_full.clear()
        result = client.produce("full", build_batch([Record(b"k", b"after", 1000)]))
        assert (result.error_code, result.base_offset) == (NONE, 1)
    finally:
        client.close()
    assert consume(broker.bootstrap, "full", 2) == [(0, b"before"), (1, b"after")]
