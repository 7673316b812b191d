"""`streams health check`: the end-to-end canary. Produce one record to a health topic with
acks=all, read it back by offset, print the round-trip latency; exit non-zero on any failure.

It goes through the same path as an application (metadata, produce, fetch), so it fails when
a broker is up but cannot serve: a full disk, a partition without a leader, a wrong listener.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from ..kafka import clients
from .client import (
    REQUEST_TIMEOUT_MS,
    CliError,
    add_bootstrap_argument,
    admin_client,
    connection_kwargs,
    positive_int,
    run_command,
    start_client,
)

PROG = "streams health check"
DEFAULT_TOPIC = "streams-health"


def add_parser(sub: argparse._SubParsersAction) -> None:
    health = sub.add_parser("health", help="end-to-end health checks")
    health_sub = health.add_subparsers(dest="health_command", required=True)
    check = health_sub.add_parser(
        "check", help="produce a record to a health topic, read it back, print the latency")
    add_bootstrap_argument(check)
    check.add_argument("--topic", default=DEFAULT_TOPIC,
                       help=f"health topic, created with one partition if missing "
                            f"(default {DEFAULT_TOPIC})")
    check.add_argument("--count", type=positive_int, default=1, metavar="N",
                       help="round trips to make (default 1); the summary gives min/avg/max")
    check.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="fail when one round trip takes longer (default 10)")
    check.add_argument("--json", action="store_true", help="print the result as one JSON line")
    check.set_defaults(func=lambda a: run_command(PROG, lambda: health_check(a)))


async def _ensure_topic(args: argparse.Namespace) -> None:
    async with admin_client(args) as admin:
        if args.topic in await admin.list_topics():
            return
        with contextlib.suppress(TopicAlreadyExistsError):  # created meanwhile
            await admin.create_topics([NewTopic(args.topic, 1, 1)])


async def health_check(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    await asyncio.wait_for(_ensure_topic(args), args.timeout)
    producer = clients.producer(connection_kwargs(args, "producer"), acks="all",
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    # A short fetch wait: the read-back is the latency being measured, not a long poll.
    consumer = clients.consumer(connection_kwargs(args, "consumer"), fetch_max_wait_ms=10,
                                enable_auto_commit=False, request_timeout_ms=REQUEST_TIMEOUT_MS)
    await start_client(producer, args.bootstrap_servers)
    try:
        await start_client(consumer, args.bootstrap_servers)
        tp = TopicPartition(args.topic, 0)
        consumer.assign([tp])
        trips = []
        for _ in range(args.count):
            try:
                trips.append(await asyncio.wait_for(
                    _round_trip(producer, consumer, tp), args.timeout))
            except TimeoutError:
                raise CliError(f"no round trip through {args.topic} within {args.timeout:g} s "
                               f"on {args.bootstrap_servers}") from None
    finally:
        await consumer.stop()
        await producer.stop()
    total_ms = [t[0] for t in trips]
    result = {"status": "OK", "bootstrap.servers": args.bootstrap_servers,
              "topic": args.topic, "round_trips": len(trips),
              "latency_ms": {"min": round(min(total_ms), 2),
                             "avg": round(sum(total_ms) / len(total_ms), 2),
                             "max": round(max(total_ms), 2)},
              "produce_ms": round(trips[-1][1], 2), "consume_ms": round(trips[-1][2], 2),
              "offset": trips[-1][3],
              "elapsed_ms": round((time.perf_counter() - started) * 1000, 2)}
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        latency = result["latency_ms"]
        print(f"OK: {args.bootstrap_servers} round trip {latency['avg']:.1f} ms "
              f"(produce {result['produce_ms']:.1f} ms, read back {result['consume_ms']:.1f} ms;"
              f" topic {args.topic} offset {result['offset']}"
              + (f"; {len(trips)} trips min {latency['min']:.1f} max {latency['max']:.1f} ms"
                 if len(trips) > 1 else "") + ")", flush=True)
    return 0


async def _round_trip(producer: AIOKafkaProducer, consumer: AIOKafkaConsumer,
                      tp: TopicPartition) -> tuple[float, float, float, int]:
    """(total ms, produce ms, read-back ms, offset) of one record."""
    payload = f"{uuid.uuid4()} {time.time_ns()}".encode()
    start = time.perf_counter()
    metadata = await producer.send_and_wait(tp.topic, payload, key=b"health",
                                            partition=tp.partition)
    produced = time.perf_counter()
    consumer.seek(tp, metadata.offset)
    while True:
        batch = await consumer.getmany(tp, timeout_ms=200)
        for record in batch.get(tp, []):
            if record.offset == metadata.offset:
                if record.value != payload:
                    raise CliError(f"read back a different record at {tp.topic}-"
                                   f"{tp.partition}@{record.offset}")
                done = time.perf_counter()
                return ((done - start) * 1000, (produced - start) * 1000,
                        (done - produced) * 1000, metadata.offset)
