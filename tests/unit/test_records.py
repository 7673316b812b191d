"""Record batch v2: building, header parsing, validation (CRC32C), control batches; and the
protocol module's dict -> kio entity builder."""

from __future__ import annotations

import datetime
import io
import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from streams.broker.protocol import build_entity, encode_response, parse_header
from streams.broker.records import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_LOG_APPEND,
    ATTR_TRANSACTIONAL,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    HEADER_SIZE,
    InvalidBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    patch_base_offset,
    read_varint,
    set_log_append_time,
    validate_produced,
    write_varint,
)
from streams.broker.records import parse_header as parse_batch_header

RECORDS = [
    Record(b"key-1", b"value-1", 1_000, (("h", b"x"),)),
    Record(None, b"\x00\xff" * 100, 1_005, ()),
    Record(b"k3", None, 990, (("a", None), ("b", b""))),  # tombstone, timestamp goes back
    Record(b"", b"", 2_000_000, (("unicode-\u00e9", b"\x01"),)),
]


def test_build_then_validate_and_parse_header() -> None:
    data = build_batch(RECORDS, producer_id=42, producer_epoch=3, base_sequence=7)
    [(pos, header)] = validate_produced(data)
    assert pos == 0
    assert header.magic == 2
    assert header.size == len(data)
    assert header.record_count == 4
    assert header.last_offset_delta == 3
    assert header.base_timestamp == 1_000
    assert header.max_timestamp == 2_000_000
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 7)
    assert header.last_sequence == 10
    assert not header.is_control and not header.is_transactional and header.compression == 0


def test_decode_round_trip() -> None:
    data = build_batch(RECORDS, base_offset=100)
    decoded = decode_records(data)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (r.key, r.value, r.timestamp, r.headers) for r in RECORDS]
    assert [r.offset for r in decoded] == [100, 101, 102, 103]


def test_aiokafka_reads_our_batches_and_we_validate_theirs() -> None:
    ours = build_batch(RECORDS, base_offset=5)
    batch = DefaultRecordBatch(bytearray(ours))
    assert batch.validate_crc()
    got = [(r.offset, r.key, r.value, r.timestamp, list(r.headers)) for r in batch]
    assert got == [(5 + i, r.key, r.value, r.timestamp, list(r.headers))
                   for i, r in enumerate(RECORDS)]

    for codec in (0, 1, 2, 3, 4):  # none, gzip, snappy, lz4, zstd
        builder = DefaultRecordBatchBuilder(2, codec, 0, 9, 1, 0, 1 << 20)
        for i in range(20):
            builder.append(i, 1_000 + i, b"k%d" % i, b"v" * i, [("h", b"%d" % i)])
        theirs = bytes(builder.build())
        [(_pos, header)] = validate_produced(theirs)
        assert header.compression == codec
        assert (header.record_count, header.last_offset_delta) == (20, 19)
        assert (header.base_timestamp, header.max_timestamp) == (1_000, 1_019)
        assert (header.producer_id, header.producer_epoch) == (9, 1)


@pytest.mark.parametrize("where", [21, 22, 30, 45, HEADER_SIZE, HEADER_SIZE + 10, -1])
def test_crc_covers_attributes_onwards(where: int) -> None:
    data = bytearray(build_batch(RECORDS))
    data[where] ^= 0x01
    with pytest.raises(InvalidBatch, match="CRC32C mismatch"):
        validate_produced(bytes(data))


def test_fields_outside_the_crc_can_change() -> None:
    data = bytearray(build_batch(RECORDS))
    patch_base_offset(data, 0, 123456)
    data[12:16] = struct.pack(">i", 9)  # partition leader epoch
    [(_pos, header)] = validate_produced(bytes(data))
    assert header.base_offset == 123456 and header.leader_epoch == 9
    assert [r.offset for r in decode_records(bytes(data))] == [123456 + i for i in range(4)]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d[:0], "empty record set"),
        (lambda d: d[:40], "shorter than its 61-byte header"),
        (lambda d: d[:-1], "length does not match"),
        (lambda d: d + b"\x00" * 10, "shorter than its 61-byte header"),
        (lambda d: d[:16] + b"\x01" + d[17:], "magic 1"),
        (lambda d: d[:8] + struct.pack(">i", 20) + d[12:], "length does not match"),
    ],
)
def test_malformed_batches_are_rejected(mutate, message: str) -> None:
    data = bytearray(build_batch(RECORDS))
    with pytest.raises(InvalidBatch, match=message):
        validate_produced(bytes(mutate(data)))


def test_record_count_checks() -> None:
    data = bytearray(build_batch(RECORDS))
    struct.pack_into(">i", data, 57, 0)  # recordCount = 0 (CRC is checked after)
    with pytest.raises(InvalidBatch, match="no records"):
        validate_produced(bytes(data))
    data = bytearray(build_batch(RECORDS))
    struct.pack_into(">i", data, 23, 1)  # lastOffsetDelta 1 < 4 records
    with pytest.raises(InvalidBatch, match="lastOffsetDelta"):
        validate_produced(bytes(data))


def test_several_batches_and_partial_tail() -> None:
    first = build_batch(RECORDS[:2])
    second = build_batch(RECORDS[2:], base_offset=2)
    both = first + second
    assert [pos for pos, _ in validate_produced(both)] == [0, len(first)]
    # iter_batches (used on stored data) stops quietly before a torn batch.
    assert [pos for pos, _ in iter_batches(both + second[:70])] == [0, len(first)]
    assert [pos for pos, _ in iter_batches(both[:-1])] == [0]
    # validate_produced refuses it.
    with pytest.raises(InvalidBatch):
        validate_produced(both + second[:70])


def test_control_batch() -> None:
    for commit, kind in ((True, CONTROL_COMMIT), (False, CONTROL_ABORT)):
        data = build_control_batch(77, 4, commit, 5_000, coordinator_epoch=6)
        [(_pos, header)] = validate_produced(data)
        assert header.is_control and header.is_transactional
        assert header.attributes & (ATTR_CONTROL | ATTR_TRANSACTIONAL) == 0x30
        assert (header.producer_id, header.producer_epoch) == (77, 4)
        [record] = decode_records(data)
        assert struct.unpack(">hh", record.key) == (0, kind)
        assert struct.unpack(">hi", record.value) == (0, 6)
        assert record.timestamp == 5_000
        aio = DefaultRecordBatch(bytearray(data))
        assert aio.validate_crc() and aio.is_control_batch and aio.is_transactional


def test_log_append_time_rewrite_keeps_the_batch_valid() -> None:
    data = bytearray(build_batch(RECORDS))
    [(pos, header)] = validate_produced(bytes(data))
    set_log_append_time(data, pos, header, 7_777)
    [(_pos, rewritten)] = validate_produced(bytes(data))
    assert rewritten.attributes & ATTR_TIMESTAMP_LOG_APPEND
    assert (rewritten.base_timestamp, rewritten.max_timestamp) == (7_777, 7_777)
    assert DefaultRecordBatch(bytearray(data)).validate_crc()


@pytest.mark.parametrize("n", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31), 2**62])
def test_zigzag_varints(n: int) -> None:
    out = bytearray()
    write_varint(out, n)
    assert read_varint(bytes(out) + b"\xff", 0) == (n, len(out))


def test_parse_header_matches_struct_layout() -> None:
    data = build_batch(RECORDS, base_offset=2**40, producer_id=1, producer_epoch=2,
                       base_sequence=3)
    header = parse_batch_header(data)
    assert header.base_offset == 2**40
    assert header.crc == struct.unpack_from(">I", data, 17)[0]
    assert header.length == len(data) - 12


# --- protocol: dict -> kio entity -----------------------------------------------------------


def test_build_entity_fills_defaults_and_nests() -> None:
    schema = load_response_schema(3, 1)  # Metadata v1
    entity = build_entity(schema, {
        "brokers": [{"node_id": 0, "host": "h", "port": 9}],
        "topics": [{"name": "t", "error_code": 3, "partitions": [
            {"partition_index": 0, "leader_id": 0, "replica_nodes": [0], "isr_nodes": [0]}]}],
    })
    assert entity.controller_id == -1  # the schema default is kept when not given
    [topic] = entity.topics
    assert topic.error_code is ErrorCode.unknown_topic_or_partition
    assert topic.is_internal is False
    [partition] = topic.partitions
    assert partition.error_code is ErrorCode.none
    assert partition.replica_nodes == (0,)
    assert entity.brokers[0].rack is None  # nullable -> None


def test_encode_response_round_trips_through_kio() -> None:
    from streams.broker.protocol import RequestContext

    for version in (0, 3, 4):  # non-flexible and flexible ApiVersions
        ctx = RequestContext(18, version, 99, "c", version >= 3)
        frame = encode_response(ctx, {"error_code": 0, "api_keys": [
            {"api_key": 0, "min_version": 3, "max_version": 9}], "throttle_time": 5})
        size, corr = struct.unpack_from(">ii", frame)
        assert (size, corr) == (len(frame) - 4, 99)
        # ApiVersions responses always use header v0: the body starts right after.
        entity, _ = entity_reader(load_response_schema(18, version))(frame, 8)
        assert entity.api_keys[0].max_version == 9
        if version >= 1:
            assert entity.throttle_time == datetime.timedelta(milliseconds=5)


def test_parse_request_header_flexible_and_legacy() -> None:
    legacy = struct.pack(">hhih", 3, 1, 7, 3) + b"cli" + b"BODY"
    ctx, pos = parse_header(legacy)
    assert (ctx.api_key, ctx.api_version, ctx.correlation_id, ctx.client_id) == (3, 1, 7, "cli")
    assert not ctx.flexible and legacy[pos:] == b"BODY"
    flexible = struct.pack(">hhih", 3, 9, 8, -1) + b"\x01\x00\x02ab" + b"BODY"
    ctx, pos = parse_header(flexible)
    assert ctx.flexible and ctx.client_id is None and flexible[pos:] == b"BODY"


# --- protocol: length checks before kio decodes a request ------------------------------------


def _registered_versions():
    from streams.broker import handlers

    handlers.load_all()
    return [(key, v) for key, spec in sorted(handlers.REGISTRY.items())
            for v in range(spec.min_version, spec.max_version + 1)]


def test_bounds_check_walks_valid_requests_exactly() -> None:
    from kio.index import load_request_schema
    from kio.serial import entity_writer

    from streams.broker import bounds

    batch = build_batch(RECORDS)
    for key, version in _registered_versions():
        schema = load_request_schema(key, version)
        body = {}
        if key == 0:  # Produce with real records
            body = {"acks": -1, "timeout": 1000, "topic_data": [
                {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
        out = io.BytesIO()
        entity_writer(schema)(out, build_entity(schema, body))
        data = b"HDR" + out.getvalue()
        assert bounds.check(schema, data, 3) == len(data), (key, version)


def test_bounds_check_rejects_counts_beyond_the_frame() -> None:
    from kio.index import load_request_schema

    from streams.broker import bounds

    with pytest.raises(bounds.BoundsError):  # DeleteRecords v2: ~5e9 topics in 5 bytes
        bounds.check(load_request_schema(21, 2), bytes.fromhex("c28f87ea12"), 0)
    with pytest.raises(bounds.BoundsError):  # Metadata v1: 2**31-1 topics
        bounds.check(load_request_schema(3, 1), b"\x7f\xff\xff\xff", 0)
    with pytest.raises(bounds.BoundsError):  # truncated
        bounds.check(load_request_schema(3, 1), b"\x00\x00\x00\x01\x00\x05ab", 0)
