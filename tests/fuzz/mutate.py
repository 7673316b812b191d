"""Mutation strategies: each turns a recorded frame into a Case (the bytes to send).

Case ``i`` of seed ``S`` depends on nothing but ``(S, i)`` and the corpus, so any case can be
regenerated on its own.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

from . import batches, fields, group_seeds
from .corpus import CorpusFrame, sequences
from .wire import decode, encode, framed, length_fields, set_length

PRODUCE, LIST_OFFSETS = 0, 2
COMPACT_TOPIC = "fz-compact"


@dataclass(frozen=True, slots=True)
class Case:
    """What one fuzz step sends on a fresh connection; ``wire`` includes the size prefixes."""

    index: int
    label: str
    source: str  # client session of the recorded frame it came from
    wire: bytes
    api_key: int  # of the (first) frame, as sent
    api_version: int


class Corpus:
    """The recorded frames with the lookups strategies need."""

    def __init__(self, frames: list[CorpusFrame]) -> None:
        self.sequences = sequences(frames)
        self.frames = [f for f in frames
                       if not f.session.startswith(group_seeds.SEQUENCE_PREFIX)]
        self.produce = [f for f in self.frames if f.api_key == PRODUCE and _has_batches(f)]
        self.list_offsets = [f for f in self.frames if f.api_key == LIST_OFFSETS]


def _has_batches(frame: CorpusFrame) -> bool:
    _, entity = decode(frame.payload)
    return any(p.records for t in entity.topic_data for p in t.partition_data)


Strategy = Callable[[random.Random, Corpus], tuple[str, CorpusFrame, bytes]]


# -- byte level -------------------------------------------------------------------------------


def bit_flips(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    buf = bytearray(frame.payload)
    n = rng.choice((1, 1, 2, 4, 8))
    for _ in range(n):
        pos = rng.randrange(len(buf))
        buf[pos] ^= 1 << rng.randrange(8)
    return f"bit-flips x{n}", frame, framed(bytes(buf))


def insert_bytes(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    pos = rng.randrange(len(frame.payload) + 1)
    junk = rng.randbytes(rng.choice((1, 2, 4, 16)))
    return f"insert {len(junk)}B at {pos}", frame, framed(
        frame.payload[:pos] + junk + frame.payload[pos:])


def delete_bytes(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    pos = rng.randrange(len(frame.payload))
    n = rng.choice((1, 2, 4, 16))
    return f"delete {n}B at {pos}", frame, framed(frame.payload[:pos] + frame.payload[pos + n :])


def truncate(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    cut = rng.randrange(len(frame.payload))
    if rng.random() < 0.5:
        return f"truncate to {cut}B", frame, framed(frame.payload[:cut])
    # the size prefix still promises the whole frame; the connection ends early
    return f"truncate to {cut}B, size kept", frame, framed(frame.payload)[: 4 + cut]


def frame_size(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    size = rng.choice((-1, -(2**31), 0, 7, 2**31 - 1, 100 * 2**20 + 1, 100 * 2**20,
                       len(frame.payload) - 1, len(frame.payload) + 1,
                       len(frame.payload) + rng.randrange(1, 4096)))
    return f"frame size {size}", frame, struct.pack(">i", size) + frame.payload


def length_field(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    field = rng.choice(length_fields(frame.payload))
    value = rng.choice((-1, -2, -(2**31), 2**31 - 1, 2**15 - 1, 2**32, 2**40, 0,
                        field.value + 1, field.value - 1, field.value * 1000 + 7))
    label = f"{field.what} length at {field.pos} ({field.kind}) {field.value} -> {value}"
    return label, frame, framed(set_length(frame.payload, field, value))


def api_header(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    key, version = struct.unpack_from(">hh", frame.payload)
    choice = rng.randrange(3)
    if choice == 0:
        key = rng.choice((-1, 4, 5, 6, 7, 17, 27, 47, 50, 51, 56, 57, 61, 65, 68, 74, 1000,
                          32767, -32768, rng.randrange(0, 90)))
    elif choice == 1:
        version = rng.choice((-1, -32768, 32767, version + 1, version - 1, rng.randrange(0, 16)))
    else:  # another supported key with this body: decoded under the wrong schema
        key = rng.choice((0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22,
                          24, 25, 26, 28, 29, 32, 33, 35, 36, 37, 42, 43, 44, 60))
    payload = struct.pack(">hh", key, version) + frame.payload[4:]
    return f"api key {key} version {version}", frame, framed(payload)


# -- structure level --------------------------------------------------------------------------


def field_value(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    header, entity = decode(frame.payload)
    mutated, label = fields.mutate_leaf(rng, entity)
    return label, frame, framed(encode(frame.payload, header, mutated))


def oversized_array(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.frames)
    header, entity = decode(frame.payload)
    mutated, label = fields.grow_arrays(rng, entity, len(frame.payload))
    return label, frame, framed(encode(frame.payload, header, mutated))


# -- record batches ---------------------------------------------------------------------------


def _batch_case(rng: random.Random, corpus: Corpus, mutate: Callable[[bytes], tuple[str, bytes]],
                topic: str | None = None) -> tuple[str, CorpusFrame, bytes]:
    frame = rng.choice(corpus.produce)
    header, entity = decode(frame.payload)
    original = fields.first_records(entity)
    first = batches.split(original)[0]
    label, records = mutate(first)
    mutated = fields.with_records(entity, records, topic)
    where = f" into {topic}" if topic else ""
    return label + where, frame, framed(encode(frame.payload, header, mutated))


def batch_flags(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    def mutate(batch: bytes) -> tuple[str, bytes]:
        attrs = batches.attributes(batch)
        kind = rng.randrange(5)
        if kind == 0:
            return "control bit flipped", batches.with_attributes(batch, attrs ^ batches.CONTROL)
        if kind == 1:
            return "transactional bit flipped", batches.with_attributes(
                batch, attrs ^ batches.TRANSACTIONAL)
        if kind == 2:  # a well-formed marker, as only a coordinator may write it
            body = batches.control_record(rng.random() < 0.5)
            marker = batches.with_body(batch, body, codec=batches.NONE)
            flags = batches.CONTROL | batches.TRANSACTIONAL
            return "control marker", batches.with_attributes(marker, (attrs & ~7) | flags)
        if kind == 3:
            codec = rng.choice((5, 6, 7, (attrs & 7) ^ rng.randrange(1, 5)))
            return f"codec bits -> {codec}", batches.with_attributes(batch, (attrs & ~7) | codec)
        value = rng.choice((-1, 0x7FFF, 0x40, 0x80, 0x100, -32768))
        return f"attributes -> {value:#x}", batches.with_attributes(batch, value)

    return _batch_case(rng, corpus, mutate,
                       rng.choice((None, None, COMPACT_TOPIC, "__consumer_offsets",
                                   "__transaction_state")))


def batch_counts(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    def mutate(batch: bytes) -> tuple[str, bytes]:
        count = struct.unpack_from(">i", batch, batches.RECORD_COUNT)[0]
        if rng.random() < 0.6:
            value = rng.choice((0, -1, count + 1, count - 1, 2**31 - 1, -(2**31), 1000))
            return f"record count {count} -> {value}", batches.patch(
                batch, batches.RECORD_COUNT, ">i", value)
        value = rng.choice((-1, 0, 2**31 - 1, 5000, -(2**31)))
        return f"lastOffsetDelta -> {value}", batches.patch(batch, batches.LAST_DELTA, ">i", value)

    return _batch_case(rng, corpus, mutate, rng.choice((None, COMPACT_TOPIC)))


def batch_garbage(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    def mutate(batch: bytes) -> tuple[str, bytes]:
        kind = rng.randrange(5)
        if kind == 0:
            return batches.garbage_records(rng, batch)
        if kind == 1:  # producer fields forged
            pid = rng.choice((-1, 0, 1, 2**63 - 1, -(2**63), 12345))
            return f"producer id -> {pid}", batches.patch(batch, batches.PRODUCER_ID, ">q", pid)
        if kind == 2:
            magic = rng.choice((0, 1, 3, 255))
            return f"magic -> {magic}", batches.patch(batch, 16, ">b", magic - 256 * (magic > 127))
        if kind == 3:  # batchLength lies, CRC over what is there
            buf = bytearray(batches.reseal(batch))
            length = rng.choice((0, 48, 49, len(batch) - 11, 2**31 - 1, -1))
            struct.pack_into(">i", buf, 8, length)
            return f"batch length -> {length}", bytes(buf)
        n = rng.choice((2, 3, 50))
        return f"batch repeated x{n}", batch * n

    return _batch_case(rng, corpus, mutate, rng.choice((None, COMPACT_TOPIC)))


def bomb(rng: random.Random, corpus: Corpus) -> tuple[str, CorpusFrame, bytes]:
    """A decompression bomb (or a payload lying about its size) with a valid CRC, then a
    ListOffsets by timestamp for the same partition, which reads stored batches."""
    codec = rng.choice((batches.ZSTD, batches.ZSTD, batches.GZIP, batches.LZ4, batches.SNAPPY))
    real = codec != batches.SNAPPY and rng.random() < 0.6
    body = batches.bomb_body(codec) if real else batches.lying_size_body(codec)
    topic = rng.choice((COMPACT_TOPIC, None))
    label, frame, wire = _batch_case(
        rng, corpus, lambda b: ("", batches.with_body(b, body, codec)), topic)
    kind = "bomb" if real else "lying size"
    label = f"{kind} codec {codec}{label}"
    if corpus.list_offsets:
        lo = rng.choice(corpus.list_offsets)
        header, entity = decode(lo.payload)
        produced = fields.produce_target(decode(wire[4:])[1])
        wire += framed(encode(lo.payload, header, fields.list_offsets_for(entity, *produced)))
        label += " + ListOffsets(timestamp)"
    return label, frame, wire


# -- group sessions -----------------------------------------------------------------------------

SEQUENCE_MUTATIONS: tuple[Strategy, ...] = (
    field_value, field_value, field_value, field_value, bit_flips, length_field, api_header,
    oversized_array, truncate, delete_bytes)


def group_session(rng: random.Random, corpus: Corpus, index: int
                  ) -> tuple[str, CorpusFrame, bytes]:
    """A KIP-848 or KIP-932 seed sequence on the case's own group, one frame mutated: the
    frames before it make a joined member (a real epoch, acquired records), the ones after
    it act on what the hostile frame left behind."""
    if not corpus.sequences:
        raise fields.NotApplicable("no group sequences in the corpus")
    kind = rng.choice(sorted(corpus.sequences))
    frames = [group_seeds.rename(f, kind, index) for f in corpus.sequences[kind]]
    at = rng.randrange(len(frames))
    target = CorpusFrame("group-seed", frames[at])
    strategy = rng.choice(SEQUENCE_MUTATIONS)
    label, _, wire = strategy(rng, Corpus([target]))
    before = b"".join(framed(f) for f in frames[:at])
    after = b"".join(framed(f) for f in frames[at + 1 :])
    return (f"{kind} sequence, frame {at} (api {target.api_key}) {strategy.__name__}: {label}",
            target, before + wire + after)


STRATEGIES: list[tuple[Strategy, int]] = [
    (bit_flips, 10), (insert_bytes, 4), (delete_bytes, 4), (truncate, 4), (frame_size, 4),
    (length_field, 14), (api_header, 8), (field_value, 16), (oversized_array, 4),
    (batch_flags, 10), (batch_counts, 6), (batch_garbage, 8), (bomb, 2),
    (group_session, 24),  # type: ignore[list-item] # takes the case index too (generate)
]


def generate(seed: int, index: int, corpus: Corpus) -> Case:
    """Case ``index`` of ``seed``. A strategy that cannot apply to the frame it drew (or made a
    value kio will not encode) draws again; after five misses the case is bit flips."""
    rng = random.Random(f"{seed}/{index}")
    strategy = rng.choices([s for s, _ in STRATEGIES], [w for _, w in STRATEGIES])[0]
    for _attempt in range(5):
        try:
            if strategy is group_session:
                label, frame, wire = group_session(rng, corpus, index)
            else:
                label, frame, wire = strategy(rng, corpus)
            break
        except Exception:  # noqa: BLE001 - kio rejects some hostile values; draw another
            continue
    else:
        label, frame, wire = bit_flips(rng, corpus)
        label += f" (instead of {strategy.__name__})"
        strategy = bit_flips
    key, version = struct.unpack_from(">hh", wire, 4) if len(wire) >= 8 else (-1, -1)
    return Case(index, f"{strategy.__name__}: {label}", frame.session, wire, key, version)


