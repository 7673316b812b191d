"""`streams produce TOPIC`: one record per stdin line, like kafka-console-producer.sh.

Lines are sent as they arrive (so typing into a terminal works), and a line without the key
separator stops the run with Kafka's "No key separator found" error after flushing what came
before it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import threading
from collections.abc import AsyncIterator
from typing import BinaryIO

from ..kafka import clients
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    connection_kwargs,
    non_negative_int,
    run_command,
    start_client,
)

PROG = "streams produce"
CHUNK = 1 << 16
MAX_PENDING = 10_000  # sends in flight before we wait for their acknowledgements


def add_parser(sub: argparse._SubParsersAction) -> None:
    produce = sub.add_parser("produce", help="send stdin lines to a topic")
    produce.add_argument("topic")
    produce.add_argument("--key-separator", metavar="SEP",
                         help="split each line into key and value at the first SEP")
    produce.add_argument("--partition", type=non_negative_int, metavar="N",
                         help="send every record to partition N (default: by key, murmur2)")
    produce.add_argument("--timestamp", type=timestamp_ms, metavar="MS|ISO",
                         help="record timestamp: epoch milliseconds or an ISO 8601 date-time "
                              "(default: the time of sending)")
    produce.add_argument("--header", action="append", type=header, default=[],
                         metavar="KEY=VALUE", help="a header on every record; repeatable")
    add_bootstrap_argument(produce)
    produce.set_defaults(func=lambda a: run_command(PROG, lambda: produce_lines(a)))


def timestamp_ms(value: str) -> int:
    """argparse type: epoch ms, or an ISO 8601 date-time (UTC unless it names a zone)."""
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO 8601 date-time, got {value!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def header(value: str) -> tuple[str, bytes]:
    """argparse type: KEY=VALUE (the value may be empty, the key may not)."""
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    return key, val.encode()


def split_line(line: bytes, separator: bytes | None, number: int) -> tuple[bytes | None, bytes]:
    if separator is None:
        return None, line
    key, sep, value = line.partition(separator)
    if not sep:
        shown = line.decode("utf-8", "replace")
        raise CliError(f"No key separator found on line number {number}: '{shown}'")
    return key, value


async def stdin_lines(stream: BinaryIO) -> AsyncIterator[bytes]:
    """Lines without their line ending, read by a daemon thread so Ctrl-C never waits on it."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=64)

    def pump() -> None:
        read = getattr(stream, "read1", stream.read)
        while True:
            chunk = read(CHUNK)
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop).result()
            except Exception:  # the command has finished (or failed) and closed its loop
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    pending = b""
    while chunk := await chunks.get():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r")
    if pending:
        yield pending.removesuffix(b"\r")


async def produce_lines(args: argparse.Namespace) -> int:
    separator = args.key_separator.encode() if args.key_separator else None
    producer = clients.producer(connection_kwargs(args, "producer"), acks="all",
                                linger_ms=5, request_timeout_ms=REQUEST_TIMEOUT_MS)
    sent = 0
    try:
        await start_client(producer, args.bootstrap_servers)
        if args.partition is not None:
            partitions = await producer.partitions_for(args.topic)
            if args.partition not in partitions:
                raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                               f"(it has {len(partitions)})")
        pending: list[asyncio.Future] = []
        try:
            number = 0
            async for line in stdin_lines(sys.stdin.buffer):
                number += 1
                key, value = split_line(line, separator, number)
                pending.append(await producer.send(
                    args.topic, value=value, key=key, partition=args.partition,
                    timestamp_ms=args.timestamp, headers=args.header or None))
                if len(pending) >= MAX_PENDING:
                    sent += await _acknowledged(pending)
        finally:
            sent += await _acknowledged(pending)
    finally:
        await producer.stop()
    print(f"Produced {sent} records to {args.topic}.", file=sys.stderr)
    return 0


async def _acknowledged(pending: list[asyncio.Future]) -> int:
    """Wait for the broker to acknowledge every pending send; raises the first failure."""
    count = len(pending)
    try:
        await asyncio.gather(*pending)
    finally:
        pending.clear()
    return count
