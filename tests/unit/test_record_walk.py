"""The record walk's uniform-run shortcut accepts and refuses exactly what a record-by-record
parse (DefaultRecord.readFrom) does, on batches built to look uniform and then damaged."""

from __future__ import annotations

import random

import pytest

from streams.broker import validation
from streams.broker.records import write_varint
from streams.broker.validation import _BadRecord, walk_records


def _uvarint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    value = shift = 0
    for n in range(max_bytes):
        b = buf[pos + n]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos + n + 1
        shift += 7
    raise ValueError("varint too long")


def reference(buf: bytes, pos: int, end: int, count: int, need_key: bool) -> list[int] | None:
    """Keyless indexes, or None when Kafka would refuse the records."""
    keyless = []
    try:
        for index in range(count):
            size, pos = _uvarint(buf, pos, 5)
            if size < 6 or pos + size > end:
                return None
            stop = pos + size
            p = pos + 1
            _ts, p = _uvarint(buf, p, 10)
            delta, p = _uvarint(buf, p, 5)
            if delta != index:
                return None
            key, p = _uvarint(buf, p, 5)
            if key >= 0:
                p += key
            elif key != -1:
                return None
            elif need_key:
                keyless.append(index)
            value, p = _uvarint(buf, p, 5)
            if value >= 0:
                p += value
            elif value != -1:
                return None
            headers, p = _uvarint(buf, p, 5)
            if headers < 0:
                return None
            for _ in range(headers):
                hk, p = _uvarint(buf, p, 5)
                if hk < 0:
                    return None
                p += hk
                hv, p = _uvarint(buf, p, 5)
                if hv >= 0:
                    p += hv
                elif hv != -1:
                    return None
            if p != stop:
                return None
            pos = stop
    except (IndexError, ValueError):
        return None
    return keyless if pos == end else None


def record(index: int, ts_delta: int, key: bytes | None, value: bytes | None,
           headers: int = 0, wide_delta: bool = False) -> bytes:
    body = bytearray(b"\0")
    write_varint(body, ts_delta)
    if wide_delta:  # a non-minimal 3-byte varint, which Kafka accepts
        z = index << 1
        body += bytes([0x80 | (z & 0x7F), 0x80 | ((z >> 7) & 0x7F), z >> 14])
    else:
        write_varint(body, index)
    for part in (key, value):
        if part is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(part))
            body += part
    write_varint(body, headers)
    for h in range(headers):
        write_varint(body, 1)
        body += bytes([65 + h])
        write_varint(body, -1)
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


def batch_records(rng: random.Random, count: int) -> bytes:
    """Mostly uniform records (as producers write them), with a few odd ones."""
    value_size = rng.choice([0, 1, 7, 100, 1024])
    keyed = rng.random() < 0.5
    wide = rng.random() < 0.1
    parts = []
    for i in range(count):
        ts = rng.choice([0, 0, 0, 1, 5, 70, 9000]) if rng.random() < 0.3 else 0
        size = value_size if rng.random() < 0.95 else rng.randrange(0, 200)
        key = b"k%d" % (i % 10) if keyed or rng.random() < 0.02 else None
        headers = 1 if rng.random() < 0.02 else 0
        parts.append(record(i, ts, key, bytes(size), headers, wide))
    return b"".join(parts)


def damage(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.random()
        at = rng.randrange(len(buf))
        if kind < 0.6:
            buf[at] = rng.randrange(256)
        elif kind < 0.8:
            buf[at] ^= 1 << rng.randrange(8)
        elif kind < 0.9:
            del buf[at]
        else:
            buf.insert(at, rng.randrange(256))
    return bytes(buf)


def walk(buf: bytes, count: int, need_key: bool) -> list[int] | None:
    try:
        return walk_records(buf, 0, len(buf), count, need_key)
    except _BadRecord:
        return None


@pytest.mark.parametrize("seed", range(16))
def test_walk_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        count = rng.choice([1, 2, 3, 63, 64, 65, 200, 2000, 8200])
        data = batch_records(rng, count)
        need_key = rng.random() < 0.5
        for candidate, n in ((data, count), (damage(rng, data), count),
                             (data, count + rng.choice([-1, 1]))):
            assert walk(candidate, n, need_key) == reference(candidate, 0, len(candidate), n,
                                                             need_key)


def test_uniform_batch_with_one_bad_offset_delta_deep_inside() -> None:
    data = bytearray(b"".join(record(i, 0, None, bytes(100)) for i in range(500)))
    stride = len(record(100, 0, None, bytes(100)))
    first_wide = len(b"".join(record(i, 0, None, bytes(100)) for i in range(64)))
    at = first_wide + (300 - 64) * stride
    # length (2 bytes), attributes, timestamp delta, then the offset delta 300 (zigzag 600)
    assert data[at + 4 : at + 6] == bytes([0x80 | (600 & 0x7F), 600 >> 7])
    data[at + 4] ^= 2  # record 300 now claims offset delta 301
    with pytest.raises(_BadRecord) as info:
        walk_records(bytes(data), 0, len(data), 500, False)
    assert info.value.index == 300
    assert "offset delta 301, expected 300" in str(info.value)


def test_uniform_records_take_the_run_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    original = validation._uniform_run

    def spy(*args: object) -> int:
        runs.append(original(*args))  # type: ignore[arg-type]
        return runs[-1]

    monkeypatch.setattr(validation, "_uniform_run", spy)
    data = b"".join(record(i, i % 3, None, bytes(100)) for i in range(10_000))
    assert walk_records(data, 0, len(data), 10_000, False) == []
    assert sum(r for r in runs if r > 0) > 9_900


def test_compacted_keyless_records_are_all_reported() -> None:
    data = b"".join(record(i, 0, None if i % 100 else b"k", bytes(10)) for i in range(300))
    assert walk_records(data, 0, len(data), 300, True) == [
        i for i in range(300) if i % 100
    ]
