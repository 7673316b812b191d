"""The message browser: read a window of records from one partition (or all) without a group,
starting at an offset or a timestamp, filter by key, and decode keys and values the way
`streams consume` does (its DESERIALIZERS and REGISTRY_FORMATS, reused, not copied)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition

from ..cli.client import REQUEST_TIMEOUT_MS, CliError, connection_kwargs, start_client
from ..cli.consume_cmd import DESERIALIZERS, REGISTRY_FORMATS, registry_reader
from ..kafka import clients
from ..kafka.internals import wait_on_metadata
from .cluster import ConsoleError

FORMATS = sorted([*DESERIALIZERS, *REGISTRY_FORMATS])
MAX_LIMIT = 500
READ_DEADLINE_S = 5.0


def decoder(kind: str, registry_url: str | None, topic: str,
            is_key: bool) -> Callable[[bytes], str]:
    if kind in REGISTRY_FORMATS:
        if not registry_url:
            raise ConsoleError(f"{kind} needs the schema registry: start the console with "
                               "--registry-url URL")
        try:
            read = registry_reader(kind, registry_url, topic, is_key)
        except CliError as exc:
            raise ConsoleError(str(exc)) from None
    elif kind in DESERIALIZERS:
        read = DESERIALIZERS[kind]
    else:
        raise ConsoleError(f"unknown format {kind!r}: one of {', '.join(FORMATS)}")

    def text(data: bytes) -> str:
        return read(data).decode("utf-8", errors="replace")
    return text


def _show(read: Callable[[bytes], str], data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return read(data)
    except Exception as exc:  # a wrong size, bad JSON, an unknown schema id: shown per record
        return f"<cannot decode: {exc}>"


async def browse(args: Any, topic: str, *, partition: int | None, offset: int | None,
                 timestamp_ms: int | None, key_filter: str, key_format: str, value_format: str,
                 limit: int, registry_url: str | None) -> list[dict[str, Any]]:
    """Up to ``limit`` records from each chosen partition, from ``offset`` (default: the last
    ``limit``) or the first at/after ``timestamp_ms``; a record is kept when its decoded key
    contains ``key_filter``."""
    limit = max(1, min(limit, MAX_LIMIT))
    read_key = decoder(key_format, registry_url, topic, True)
    read_value = decoder(value_format, registry_url, topic, False)
    consumer = clients.consumer(connection_kwargs(args, "consumer"), enable_auto_commit=False,
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        await start_client(consumer, args.bootstrap_servers)
    except CliError as exc:
        raise ConsoleError(str(exc)) from None
    try:
        partitions = await wait_on_metadata(consumer, topic)  # the caller checked it exists
        if partition is not None:
            if partition not in partitions:
                raise ConsoleError(f"topic {topic!r} has no partition {partition}")
            partitions = {partition}
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        if not tps:
            raise ConsoleError(f"topic {topic!r} does not exist")
        consumer.assign(tps)
        starts = await consumer.beginning_offsets(tps)
        ends = await consumer.end_offsets(tps)
        if timestamp_ms is not None:
            found = await consumer.offsets_for_times({tp: timestamp_ms for tp in tps})
            begin = {tp: (found[tp].offset if found.get(tp) else ends[tp]) for tp in tps}
        elif offset is not None:
            begin = {tp: min(max(offset, starts[tp]), ends[tp]) for tp in tps}
        else:
            begin = {tp: max(starts[tp], ends[tp] - limit) for tp in tps}
        for tp in tps:
            consumer.seek(tp, begin[tp])
        pending = {tp for tp in tps if begin[tp] < ends[tp]}
        taken = dict.fromkeys(tps, 0)
        rows: list[dict[str, Any]] = []
        deadline = time.monotonic() + READ_DEADLINE_S
        while pending and time.monotonic() < deadline:
            batches = await consumer.getmany(*pending, timeout_ms=500)
            for tp, records in batches.items():
                for record in records:
                    if tp not in pending:
                        break
                    if record.offset + 1 >= ends[tp] or taken[tp] + 1 >= limit:
                        pending.discard(tp)
                    key = await asyncio.to_thread(_show, read_key, record.key)
                    if key_filter and (key is None or key_filter not in key):
                        continue
                    taken[tp] += 1
                    rows.append({
                        "partition": tp.partition, "offset": record.offset,
                        "timestamp": record.timestamp, "key": key,
                        "value": await asyncio.to_thread(_show, read_value, record.value),
                        "headers": [(k, v.decode("utf-8", errors="replace") if v else v)
                                    for k, v in record.headers or ()]})
        return sorted(rows, key=lambda r: (r["partition"], r["offset"]))
    finally:
        await consumer.stop()


async def produce(args: Any, topic: str, key: str | None, value: str) -> tuple[int, int]:
    """One string record (key optional): its (partition, offset)."""
    producer = clients.producer(connection_kwargs(args, "producer"),
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        await start_client(producer, args.bootstrap_servers)
    except CliError as exc:
        raise ConsoleError(str(exc)) from None
    try:
        meta = await producer.send_and_wait(topic, value.encode(),
                                            key=key.encode() if key else None)
        return meta.partition, meta.offset
    finally:
        await producer.stop()
