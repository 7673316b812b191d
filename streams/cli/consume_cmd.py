"""`streams consume TOPIC`: print record values, one per line, like kafka-console-consumer.sh.

Without --group the command reads every partition itself (no group, nothing committed);
with --group it joins that consumer group and commits exactly the offsets it printed, so
`streams groups describe` shows the lag a user expects.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import BinaryIO

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
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
                         help="separator printed between key and value (default tab)")
    add_bootstrap_argument(consume)
    consume.set_defaults(func=lambda a: run_command(PROG, lambda: consume_topic(a)))


def render(record: ConsumerRecord, print_key: bool, separator: bytes) -> bytes:
    value = b"null" if record.value is None else record.value
    if not print_key:
        return value + b"\n"
    key = b"null" if record.key is None else record.key
    return key + separator + value + b"\n"


async def consume_topic(args: argparse.Namespace) -> int:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap_servers,
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    try:
        await start_client(consumer, args.bootstrap_servers)
        if args.topic not in await consumer.topics():
            raise CliError(f"topic {args.topic!r} does not exist")
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
    separator = args.key_separator.encode()
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
                    out.write(render(record, args.print_key, separator))
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
