"""`streams consume TOPIC`: print record values, one per line, like kafka-console-consumer.sh.

Without --group the command reads every partition itself (no group, nothing committed);
with --group it joins that consumer group and commits exactly the offsets it printed, so
`streams groups describe` shows the lag a user expects.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from .acls_cmd import authorization_hint
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    connection_kwargs,
    positive_int,
    run_command,
    start_client,
)

PROG = "streams consume"
POLL_MS = 500
ASSIGNMENT_GRACE_S = 10.0  # --timeout-ms counts from the first assignment, or after this wait


def add_parser(sub: argparse._SubParsersAction) -> None:
    consume = sub.add_parser("consume", help="print records of a topic")
    consume.add_argument("topic")
    consume.add_argument("--from-beginning", action="store_true",
                         help="start at the earliest offset when there is no committed one")
    consume.add_argument("--group", help="consumer group to join and commit offsets for")
    consume.add_argument("--max-messages", type=positive_int, metavar="N",
                         help="exit after printing N records")
    consume.add_argument("--timeout-ms", type=positive_int, metavar="MS",
                         help="exit when no record arrives for MS milliseconds once partitions are assigned")
    consume.add_argument("--print-key", action="store_true",
                         help="print KEY<separator>VALUE (null for a missing key)")
    consume.add_argument("--key-separator", default="\t", metavar="SEP",
                         help="separator printed between the fields of a record (default tab)")
    for what in ("key", "value"):
        consume.add_argument(f"--{what}-deserializer", choices=sorted(DESERIALIZERS),
                             default="string", help=f"how to print the {what} (default string)")
    consume.add_argument("--print-timestamp", action="store_true",
                         help="print CreateTime:MS (or LogAppendTime:MS) first")
    consume.add_argument("--print-partition", action="store_true", help="print Partition:N")
    consume.add_argument("--print-offset", action="store_true", help="print Offset:N")
    consume.add_argument("--print-headers", action="store_true",
                         help="print headers as k1:v1,k2:v2 (NO_HEADERS when there are none)")
    add_bootstrap_argument(consume)
    consume.set_defaults(func=lambda a: run_command(PROG, lambda: consume_topic(a)))


def _fixed(fmt: str, size: int) -> Callable[[bytes], bytes]:
    def read(data: bytes) -> bytes:
        if len(data) != size:
            raise ValueError(f"expected {size} bytes, got {len(data)}")
        return str(struct.unpack(fmt, data)[0]).encode()
    return read


def _json(data: bytes) -> bytes:
    return json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False).encode()


# Kafka's console consumer takes deserializer classes (StringDeserializer, LongDeserializer...);
# these are their byte formats, which are also our Serdes' (big-endian fixed width).
DESERIALIZERS: dict[str, Callable[[bytes], bytes]] = {
    "string": lambda data: data,
    "bytes": lambda data: data,
    "integer": _fixed(">i", 4),
    "long": _fixed(">q", 8),
    "double": _fixed(">d", 8),
    "json": _json,
}


@dataclass
class Format:
    """What to print of each record (kafka-console-consumer's print.* properties)."""

    print_key: bool = False
    separator: bytes = b"\t"
    key: str = "string"
    value: str = "string"
    timestamp: bool = False
    partition: bool = False
    offset: bool = False
    headers: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Format:
        return cls(args.print_key, args.key_separator.encode(),
                   getattr(args, "key_deserializer", "string"),
                   getattr(args, "value_deserializer", "string"),
                   getattr(args, "print_timestamp", False), getattr(args, "print_partition", False),
                   getattr(args, "print_offset", False), getattr(args, "print_headers", False))


def _decode(kind: str, data: bytes | None, record: ConsumerRecord, what: str) -> bytes:
    if data is None:
        return b"null"
    try:
        return DESERIALIZERS[kind](data)
    except (ValueError, struct.error) as exc:
        raise CliError(f"cannot deserialize the {what} of {record.topic}-{record.partition} "
                       f"offset {record.offset} as {kind}: {exc}") from None


def render(record: ConsumerRecord, fmt: Format) -> bytes:
    """One output line, fields in the order of Kafka's DefaultMessageFormatter."""
    fields = []
    if fmt.timestamp:
        if record.timestamp is None or record.timestamp < 0:
            fields.append(b"NO_TIMESTAMP")
        else:
            kind = "LogAppendTime" if record.timestamp_type == 1 else "CreateTime"
            fields.append(f"{kind}:{record.timestamp}".encode())
    if fmt.partition:
        fields.append(f"Partition:{record.partition}".encode())
    if fmt.offset:
        fields.append(f"Offset:{record.offset}".encode())
    if fmt.headers:
        headers = [k.encode() + b":" + (b"null" if v is None else bytes(v))
                   for k, v in record.headers or ()]
        fields.append(b",".join(headers) if headers else b"NO_HEADERS")
    if fmt.print_key:
        fields.append(_decode(fmt.key, record.key, record, "key"))
    fields.append(_decode(fmt.value, record.value, record, "value"))
    return fmt.separator.join(fields) + b"\n"


async def consume_topic(args: argparse.Namespace) -> int:
    consumer = AIOKafkaConsumer(
        **connection_kwargs(args, "consumer"),
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    try:
        await start_client(consumer, args.bootstrap_servers)
        if args.topic not in await consumer.topics():
            raise CliError(f"topic {args.topic!r} does not exist"
                           f"{await authorization_hint(args)}")
        # Without a group aiokafka assigns every partition itself; auto_offset_reset then
        # picks the start, as no offsets are committed.
        consumer.subscribe([args.topic])
        await _print_records(consumer, args, sys.stdout.buffer)
    finally:
        await consumer.stop()
    return 0


async def _print_records(consumer: AIOKafkaConsumer, args: argparse.Namespace,
                         out: BinaryIO) -> int:
    """Print until --max-messages or --timeout-ms of silence; commit what was printed."""
    fmt = Format.from_args(args)
    limit = args.max_messages
    printed = 0
    started = time.monotonic()
    last_data: float | None = None  # the silence clock starts once partitions are assigned
    try:
        while limit is None or printed < limit:
            wait_ms = POLL_MS
            if last_data is None and (consumer.assignment()
                                      or time.monotonic() - started > ASSIGNMENT_GRACE_S):
                last_data = time.monotonic()
            if args.timeout_ms is not None and last_data is not None:
                left_ms = args.timeout_ms - (time.monotonic() - last_data) * 1000
                if left_ms <= 0:
                    break
                wait_ms = max(1, min(POLL_MS, int(left_ms)))
            batches = await consumer.getmany(timeout_ms=wait_ms,
                                             max_records=None if limit is None else limit - printed)
            positions: dict[TopicPartition, int] = {}
            for tp, records in batches.items():
                for record in records:
                    out.write(render(record, fmt))
                    positions[tp] = record.offset + 1
                printed += len(records)
            if positions:
                out.flush()
                last_data = time.monotonic()
                if args.group:
                    await consumer.commit(positions)
    except asyncio.CancelledError:  # Ctrl-C: still say how far we got
        print(f"Processed a total of {printed} messages", file=sys.stderr)
        raise
    print(f"Processed a total of {printed} messages", file=sys.stderr)
    return printed
