"""Shared data and checks for the third-party client compatibility tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 4
BASE_TS = 1_700_000_000_000


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c), as an unsigned 32-bit value."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    extra = length & 3
    if extra == 3:
        h ^= data[whole + 2] << 16
    if extra >= 2:
        h ^= data[whole + 1] << 8
    if extra >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def kafka_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@dataclass(frozen=True)
class Sent:
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def sample_records(count: int = 40, keys: int = 10) -> list[Sent]:
    """Keyed records with binary values, several headers and distinct timestamps."""
    out = []
    for i in range(count):
        key = f"key-{i % keys}".encode()
        # Binary, incompressible-ish but deterministic payloads of varying size.
        value = b"".join(hashlib.sha256(f"{i}-{j}".encode()).digest() for j in range(1 + i % 7))
        value += bytes([0, 255, i % 256])
        headers = (("trace", f"t{i}".encode()), ("bin", bytes([0, 1, 2, 255])))
        out.append(Sent(key, value, headers, BASE_TS + i * 10))
    return out


def check_round_trip(sent: list[Sent], got: list[tuple[int, int, Sent]], partitions: int) -> None:
    """``got`` holds (partition, offset, record). Every record came back byte-for-byte, once,
    on the partition murmur2 picks, in send order within each partition, at dense offsets."""
    assert sorted(got_rec.value for _, _, got_rec in got) == sorted(s.value for s in sent)
    by_value = {s.value: s for s in sent}
    key_partition: dict[bytes, int] = {}
    per_partition: dict[int, list[tuple[int, Sent]]] = {}
    for partition, offset, record in got:
        assert record == by_value[record.value]
        assert partition == kafka_partition(record.key, partitions), record.key
        assert key_partition.setdefault(record.key, partition) == partition
        per_partition.setdefault(partition, []).append((offset, record))
    assert len(per_partition) > 1, "keys should spread over several partitions"
    order = {s.value: i for i, s in enumerate(sent)}
    for partition, items in per_partition.items():
        items.sort(key=lambda item: item[0])
        assert [o for o, _ in items] == list(range(len(items))), partition
        positions = [order[r.value] for _, r in items]
        assert positions == sorted(positions), partition
