"""Structure-aware mutations of kio request entities: leaf values, arrays, record sets."""

from __future__ import annotations

import dataclasses
import datetime
import random
import uuid
from collections.abc import Iterator
from typing import Any

Path = tuple[tuple[str, int | None], ...]
MAX_GROWN_BYTES = 4 << 20  # an oversized array stays below the broker's 100 MiB request limit
TOPIC_NAMES = ("", "\x00", ".", "..", "../fz-escape", "a/b", "é✓", "a" * 249, "a" * 250,
               "x" * 32767, "__consumer_offsets", "__transaction_state", "fz-aio", "fz-compact",
               "fz-missing")


class NotApplicable(ValueError):
    """The chosen frame has nothing this mutation can change."""


def _is_entity(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def leaves(entity: Any, path: Path = ()) -> Iterator[tuple[Path, dataclasses.Field, Any]]:
    """Every primitive value with its path and the field that declares it."""
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                if _is_entity(item):
                    yield from leaves(item, (*path, (f.name, i)))
                else:
                    yield (*path, (f.name, i)), f, item
        elif _is_entity(value):
            yield from leaves(value, (*path, (f.name, None)))
        else:
            yield (*path, (f.name, None)), f, value


def arrays(entity: Any, path: Path = ()) -> Iterator[tuple[Path, tuple]]:
    """Every array field (its path ends at the field itself, index None)."""
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if isinstance(value, tuple):
            yield (*path, (f.name, None)), value
            for i, item in enumerate(value):
                if _is_entity(item):
                    yield from arrays(item, (*path, (f.name, i)))
        elif _is_entity(value):
            yield from arrays(value, (*path, (f.name, None)))


def replace_at(entity: Any, path: Path, value: Any) -> Any:
    (name, index), rest = path[0], path[1:]
    current = getattr(entity, name)
    if index is None:
        new = replace_at(current, rest, value) if rest else value
    else:
        items = list(current)
        items[index] = replace_at(items[index], rest, value) if rest else value
        new = tuple(items)
    return dataclasses.replace(entity, **{name: new})


def _int_values(rng: random.Random, bits: int, value: int) -> int:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    pick = rng.choice((lo, hi, -1, 0, 1, value + 1, value - 1, rng.randint(lo, hi), 1000000))
    return max(lo, min(hi, pick))


def new_value(rng: random.Random, kafka_type: str, value: Any) -> Any:
    """A hostile value of ``kafka_type`` that still encodes."""
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
    if kafka_type in bits:
        return _int_values(rng, bits[kafka_type], int(value or 0))
    if kafka_type in ("uint16", "uint32"):
        return rng.choice((0, 2 ** int(kafka_type[4:]) - 1, 1))
    if kafka_type == "bool":
        return not value
    if kafka_type == "string":
        return rng.choice((*TOPIC_NAMES, None, f"fz-{rng.randrange(16)}"))
    if kafka_type in ("bytes", "records"):
        return rng.choice((b"", None, rng.randbytes(rng.randrange(1, 300)), bytes(1000)))
    if kafka_type == "timedelta_i32":
        return datetime.timedelta(milliseconds=rng.choice((-1, 0, 1, 2**31 - 1, -(2**31))))
    if kafka_type == "timedelta_i64":
        return datetime.timedelta(milliseconds=rng.choice((-1, 0, 8 * 10**16, -8 * 10**16)))
    if kafka_type == "datetime_i64":
        return rng.choice((None, datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
                           datetime.datetime(9999, 12, 31, tzinfo=datetime.UTC)))
    if kafka_type == "uuid":
        return rng.choice((None, uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))))
    if kafka_type == "float64":
        return rng.choice((float("nan"), float("inf"), -1.0))
    raise NotApplicable(f"no hostile values for {kafka_type}")


def mutate_leaf(rng: random.Random, entity: Any) -> tuple[Any, str]:
    """One primitive set to a hostile value, or one array emptied or nulled."""
    if rng.random() < 0.15:
        found = list(arrays(entity))
        if not found:
            raise NotApplicable("no arrays")
        path, _ = rng.choice(found)
        value = rng.choice(((), None))
        return replace_at(entity, path, value), f"array {_name(path)} -> {value!r}"
    candidates = [c for c in leaves(entity) if c[1].metadata.get("kafka_type") != "error_code"]
    if not candidates:
        raise NotApplicable("no leaf fields")
    path, f, value = rng.choice(candidates)
    new = new_value(rng, f.metadata.get("kafka_type", ""), value)
    shown = repr(new) if len(repr(new)) < 60 else f"{repr(new)[:40]}...({len(repr(new))} chars)"
    return replace_at(entity, path, new), f"{_name(path)} {value!r:.40} -> {shown}"


def _name(path: Path) -> str:
    return ".".join(name if index is None else f"{name}[{index}]" for name, index in path)


def _grow(entity: Any, factor: int, deep: bool) -> Any:
    changes = {}
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if isinstance(value, tuple) and value:
            items = [_grow(v, factor, deep) if deep and _is_entity(v) else v for v in value]
            changes[f.name] = tuple(items) * factor
        elif deep and _is_entity(value):
            changes[f.name] = _grow(value, factor, deep)
    return dataclasses.replace(entity, **changes)


def grow_arrays(rng: random.Random, entity: Any, size: int) -> tuple[Any, str]:
    """Every array repeated (``deep``: nested arrays too, multiplying), within a byte budget."""
    depth = max((len(p) for p, _ in arrays(entity)), default=0)
    if not depth:
        raise NotApplicable("no arrays")
    deep = rng.random() < 0.5 and depth > 1
    budget = MAX_GROWN_BYTES // max(size, 1)
    factor = max(2, int(budget ** (1 / depth)) if deep else budget)
    factor = rng.randint(2, max(2, min(factor, 20000)))
    return _grow(entity, factor, deep), f"arrays x{factor}{' nested' if deep else ''}"


# -- produce / list offsets -------------------------------------------------------------------


def _records_path(entity: Any) -> tuple[int, int]:
    for t, topic in enumerate(entity.topic_data):
        for p, partition in enumerate(topic.partition_data):
            if partition.records:
                return t, p
    raise NotApplicable("no record set")


def first_records(entity: Any) -> bytes:
    t, p = _records_path(entity)
    return entity.topic_data[t].partition_data[p].records


def produce_target(entity: Any) -> tuple[str, int]:
    t, p = _records_path(entity)
    return entity.topic_data[t].name, entity.topic_data[t].partition_data[p].index


def with_records(entity: Any, records: bytes, topic: str | None = None) -> Any:
    """The produce request with its first record set replaced (and moved to ``topic``, p0)."""
    t, p = _records_path(entity)
    topic_data = entity.topic_data[t]
    partition = dataclasses.replace(topic_data.partition_data[p], records=records)
    if topic is not None:
        partition = dataclasses.replace(partition, index=0)
    parts = list(topic_data.partition_data)
    parts[p] = partition
    topic_data = dataclasses.replace(topic_data, partition_data=tuple(parts),
                                     name=topic or topic_data.name)
    topics = list(entity.topic_data)
    topics[t] = topic_data
    return dataclasses.replace(entity, topic_data=tuple(topics))


def list_offsets_for(entity: Any, topic: str, partition: int) -> Any:
    """A ListOffsets request asking ``topic``/``partition`` for the offset of timestamp 0."""
    if not entity.topics or not entity.topics[0].partitions:
        raise NotApplicable("empty ListOffsets")
    first = entity.topics[0]
    part = dataclasses.replace(first.partitions[0], partition_index=partition,
                               timestamp=datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
                               if isinstance(first.partitions[0].timestamp, datetime.datetime)
                               else 0)
    return dataclasses.replace(entity, topics=(dataclasses.replace(
        first, name=topic, partitions=(part,)),))
