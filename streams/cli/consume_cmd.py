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
from dataclasses import dataclass, field
from typing import BinaryIO

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from ..kafka import clients
from .acls_cmd import authorization_hint
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    connection_kwargs,
    positive_int,
    run_command,
    start_client,
    stop_requested,
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
        consume.add_argument(f"--{what}-deserializer",
                             choices=sorted([*DESERIALIZERS, *REGISTRY_FORMATS]),
                             help=f"how to print the {what} (default string; avro, protobuf "
                                  "and json_schema print JSON and need --registry-url)")
    consume.add_argument("--registry-url", metavar="URL",
                         help="the schema registry, for the avro|protobuf|json_schema "
                              "deserializers")
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


# Confluent's wire format (magic byte, schema id) read through the registry, printed as JSON:
# the Connect converters do the decoding (with the schema the id names), the JSON converter
# the printing.
REGISTRY_FORMATS = {"avro": "connect.converters.avro:AvroConverter",
                    "protobuf": "connect.converters.protobuf:ProtobufConverter",
                    "json_schema": "connect.converters.json_schema:JsonSchemaConverter"}


def registry_reader(kind: str, registry_url: str | None, topic: str,
                    is_key: bool) -> Callable[[bytes], bytes]:
    """A deserializer of ``kind`` (one of REGISTRY_FORMATS) whose output is JSON text."""
    if not registry_url:
        raise CliError(f"--{'key' if is_key else 'value'}-deserializer {kind} needs "
                       "--registry-url URL", 2)
    import importlib

    from connect.converters.json import JsonConverter

    module, _, name = REGISTRY_FORMATS[kind].partition(":")
    converter = getattr(importlib.import_module(module), name)()
    converter.configure({"schema.registry.url": registry_url}, is_key)
    printer = JsonConverter()
    printer.configure({"schemas.enable": "false"}, is_key)

    def read(data: bytes) -> bytes:
        decoded = converter.to_connect_data(topic, data)
        return bytes(printer.from_connect_data(topic, decoded.schema, decoded.value) or b"null")
    return read


def not_text_hint(data: bytes) -> str | None:
    """Which deserializer probably fits bytes that are not text (None when they are text)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\t\r\n" for c in text):
        return None
    if len(data) == 8:
        guess = "long (or double)"
    elif len(data) == 4:
        guess = "integer"
    elif len(data) >= 5 and data[0] == 0:
        guess = "avro, protobuf or json_schema with --registry-url (schema registry format)"
    else:
        guess = "bytes, or the serde that wrote them"
    return f"{len(data)} bytes ({data[:8].hex(' ')}{' ...' if len(data) > 8 else ''}): try {guess}"


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

    readers: dict[str, Callable[[bytes], bytes]] = field(default_factory=dict)
    # No deserializer named: the first value that is not text gets one hint on stderr.
    hint_pending: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Format:
        kinds = {what: getattr(args, f"{what}_deserializer", None) for what in ("key", "value")}
        fmt = cls(args.print_key, args.key_separator.encode(), kinds["key"] or "string",
                  kinds["value"] or "string", getattr(args, "print_timestamp", False),
                  getattr(args, "print_partition", False), getattr(args, "print_offset", False),
                  getattr(args, "print_headers", False))
        for what, kind in kinds.items():
            if kind in REGISTRY_FORMATS:
                fmt.readers[what] = registry_reader(kind, getattr(args, "registry_url", None),
                                                    args.topic, what == "key")
            else:
                fmt.readers[what] = DESERIALIZERS[kind or "string"]
            fmt.hint_pending[what] = kind is None
        return fmt


def _decode(fmt: Format, data: bytes | None, record: ConsumerRecord, what: str) -> bytes:
    if data is None:
        return b"null"
    if fmt.hint_pending.get(what):
        hint = not_text_hint(data)
        if hint is not None:
            fmt.hint_pending[what] = False
            print(f"{PROG}: the {what}s of {record.topic} are not text: {hint} "
                  f"(--{what}-deserializer)", file=sys.stderr, flush=True)
    kind = fmt.key if what == "key" else fmt.value
    try:
        return fmt.readers.get(what, DESERIALIZERS.get(kind, DESERIALIZERS["string"]))(data)
    except Exception as exc:  # a wrong size, bad JSON; for the registry formats a
        # DataException or an unreachable registry
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
        fields.append(_decode(fmt, record.key, record, "key"))
    fields.append(_decode(fmt, record.value, record, "value"))
    return fmt.separator.join(fields) + b"\n"


async def consume_topic(args: argparse.Namespace) -> int:
    consumer = clients.consumer(
        connection_kwargs(args, "consumer"),
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
            if stop_requested():  # a signal whose cancellation was lost on the way
                raise asyncio.CancelledError
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
