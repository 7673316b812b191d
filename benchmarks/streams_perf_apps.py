"""The four streams_perf workloads written for each framework, run one per child process.

Usage (started by ``streams_perf.py``, not by hand)::

    python streams_perf_apps.py FRAMEWORK WORKLOAD --bootstrap B --app-id ID --out TOPIC \
        --state-dir D [--guarantee at_least_once|exactly_once_v2] [--partitions P] \
        [--cache-max-bytes N] [--config KEY=VALUE ...]

FRAMEWORK is ``ours``, ``hand`` (aiokafka consume-transform-produce loop), ``quix`` or
``faust``; WORKLOAD is ``filter_map``, ``count``, ``window_count`` or ``join``. The child
imports its framework and builds the app, prints ``READY``, waits for ``GO`` on stdin (so
imports are not timed), then runs until SIGTERM. Only the framework's own package is imported,
so the Quix child can run in a separate virtualenv (its confluent-kafka pin differs).

The shared logic below (predicate, mapper, joiner) is plain Python so every framework does
exactly the same work per record.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
from typing import Any

VIEWS_TOPIC = "page-views"
USERS_TOPIC = "users"
WINDOW_MS = 10_000
MIN_DURATION_MS = 500  # filter_map keeps views at least this long


def keep(view: dict[str, Any]) -> bool:
    return view["duration_ms"] >= MIN_DURATION_MS


def mapped(view: dict[str, Any]) -> dict[str, Any]:
    return {"user": view["user_id"], "page": view["page"], "country": view["country"],
            "secs": view["duration_ms"] / 1000}


def joined(view: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {"user": view["user_id"], "page": view["page"], "region": user["region"],
            "tier": user["tier"], "ts": view["ts"]}


def window_start(ts_ms: int) -> int:
    return ts_ms - ts_ms % WINDOW_MS


def handshake() -> None:
    print("READY", flush=True)
    line = sys.stdin.readline()
    if line.strip() != "GO":
        sys.exit(0)


# ------------------------------------------------------------------------------------------------
# ours: KafkaStreams


def run_ours(args: argparse.Namespace) -> None:
    from streams import KafkaStreams, Serdes, StreamsBuilder, TimeWindows

    s, j = Serdes.string(), Serdes.json()
    builder = StreamsBuilder()
    views = builder.stream(VIEWS_TOPIC, key_serde=s, value_serde=j)
    w = args.workload
    if w == "filter_map":
        views.filter(lambda k, v: keep(v)).map_values(mapped).to(
            args.out, key_serde=s, value_serde=j)
    elif w == "count":
        views.group_by_key().count().to_stream().to(args.out, key_serde=s,
                                                    value_serde=Serdes.long())
    elif w == "window_count":
        (views.group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(WINDOW_MS))
            .count()
            .to_stream()
            .to(args.out, key_serde=Serdes.windowed(s, WINDOW_MS), value_serde=Serdes.long()))
    elif w == "join":
        users = builder.table(USERS_TOPIC, key_serde=s, value_serde=j)
        views.join(users, joined).to(args.out, key_serde=s, value_serde=j)
    config = {"application.id": args.app_id, "bootstrap.servers": args.bootstrap,
              "processing.guarantee": args.guarantee, "state.dir": args.state_dir}
    if args.cache_max_bytes is not None:  # 0: no record cache, every update is forwarded
        config["statestore.cache.max.bytes"] = args.cache_max_bytes
    for item in args.config or ():
        key, _, value = item.partition("=")
        config[key] = value
    streams = KafkaStreams(builder.build(), config)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    handshake()
    streams.start()
    while not stopped.wait(0.2):
        if streams.error is not None:
            print(f"ERROR {streams.error!r}", file=sys.stderr, flush=True)
            sys.exit(2)
    streams.close(timeout=30)


# ------------------------------------------------------------------------------------------------
# hand: a hand-written aiokafka consume-transform-produce loop, state in a dict


def run_hand(args: argparse.Namespace) -> None:
    """Batched like ours (streams/kafka/batching.py's RecordCollector): each output record is
    appended synchronously to an aiokafka batch per partition (murmur2 of the key, as the Java
    client and ours partition), every batch is handed to the producer with ``send_batch`` once
    per poll without waiting for its delivery, and deliveries are awaited only before a commit.
    Polls return everything buffered (no ``max_records``), as ours do."""
    import orjson  # the JSON library our JsonSerde and Quix Streams use
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.partitioner import murmur2

    commit_every_s = 5.0
    stop = asyncio.Event()

    async def load_users() -> dict[str, dict[str, Any]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tps = [TopicPartition(USERS_TOPIC, p) for p in range(args.partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            users: dict[str, dict[str, Any]] = {}
            while any([await consumer.position(tp) < ends[tp] for tp in tps]):
                for records in (await consumer.getmany(timeout_ms=100)).values():
                    for r in records:
                        users[r.key.decode()] = orjson.loads(r.value)
            return users
        finally:
            await consumer.stop()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        handshake_done = loop.run_in_executor(None, handshake)
        await handshake_done
        users = await load_users() if args.workload == "join" else {}
        consumer = AIOKafkaConsumer(VIEWS_TOPIC, bootstrap_servers=args.bootstrap,
                                    group_id=args.app_id, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all")
        await producer.start()
        await consumer.start()
        counts: dict[str, int] = {}
        wcounts: dict[tuple[str, int], int] = {}
        out, w, nparts = args.out, args.workload, args.partitions
        create_batch = producer.create_batch
        partition_of: dict[bytes, int] = {}
        open_batches: dict[int, Any] = {}  # partition -> batch being filled
        full: list[tuple[int, Any]] = []
        in_flight: list[asyncio.Future[Any]] = []

        def emit(key: bytes, value: bytes, ts: int) -> None:
            p = partition_of.get(key)
            if p is None:
                p = partition_of[key] = (murmur2(key) & 0x7FFFFFFF) % nparts
            batch = open_batches.get(p)
            if batch is None or batch.append(timestamp=ts, key=key, value=value,
                                             headers=[]) is None:
                if batch is not None:
                    full.append((p, batch))
                batch = open_batches[p] = create_batch()
                batch.append(timestamp=ts, key=key, value=value, headers=[])

        async def hand_over() -> None:
            ready = full + list(open_batches.items())
            full.clear()
            open_batches.clear()
            for p, batch in ready:
                in_flight.append(await producer.send_batch(batch, out, partition=p))

        async def commit() -> None:
            await hand_over()
            await asyncio.gather(*in_flight)  # delivered (acks=all) before the offsets
            in_flight.clear()
            await consumer.commit()

        last_commit = loop.time()
        try:
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                for records in batch.values():
                    for r in records:
                        key = r.key.decode()
                        view = orjson.loads(r.value)
                        if w == "filter_map":
                            if keep(view):
                                emit(r.key, orjson.dumps(mapped(view)), r.timestamp)
                        elif w == "count":
                            c = counts[key] = counts.get(key, 0) + 1
                            emit(r.key, c.to_bytes(8, "big"), r.timestamp)
                        elif w == "window_count":
                            start = window_start(r.timestamp)
                            c = wcounts[(key, start)] = wcounts.get((key, start), 0) + 1
                            emit(r.key, orjson.dumps({"start": start, "count": c}),
                                 r.timestamp)
                        else:
                            user = users.get(key)
                            if user is not None:
                                emit(r.key, orjson.dumps(joined(view, user)), r.timestamp)
                await hand_over()  # once per poll, as ours flushes its RecordCollector
                if loop.time() - last_commit >= commit_every_s:
                    await commit()
                    last_commit = loop.time()
            await commit()
        finally:
            await consumer.stop()
            await producer.stop()

    asyncio.run(main())


# ------------------------------------------------------------------------------------------------
# quix: Quix Streams (runs in its own virtualenv)


def run_quix(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from quixstreams import Application

    app = Application(broker_address=args.bootstrap, consumer_group=args.app_id,
                      auto_offset_reset="earliest", state_dir=args.state_dir,
                      loglevel="WARNING")
    views = app.topic(VIEWS_TOPIC, key_deserializer="str", value_deserializer="json")
    w = args.workload
    out = app.topic(args.out, key_serializer="str", value_serializer="json")
    sdf = app.dataframe(views)
    if w == "filter_map":
        sdf = sdf.filter(keep).apply(mapped)
    elif w == "count":
        def count(value: dict[str, Any], state: Any) -> int:
            c = state.get("count", 0) + 1
            state.set("count", c)
            return c
        sdf = sdf.apply(count, stateful=True)
    elif w == "window_count":
        sdf = (sdf.tumbling_window(timedelta(milliseconds=WINDOW_MS), grace_ms=0)
               .count().current())
    elif w == "join":
        users = app.dataframe(app.topic(USERS_TOPIC, key_deserializer="str",
                                        value_deserializer="json"))
        sdf = sdf.join_asof(users, on_merge=joined)
    sdf.to_topic(out)
    handshake()
    app.run()


# ------------------------------------------------------------------------------------------------
# faust: faust-streaming


def run_faust(args: argparse.Namespace) -> None:
    import os
    from datetime import timedelta

    import faust

    level = os.environ.get("STREAMS_PERF_LOGLEVEL", "WARNING")
    app = faust.App(args.app_id, broker=f"kafka://{args.bootstrap}",
                    store="rocksdb://", datadir=args.state_dir,
                    topic_partitions=args.partitions, web_enabled=False,
                    consumer_auto_offset_reset="earliest", key_serializer="raw",
                    value_serializer="json")
    views = app.topic(VIEWS_TOPIC, key_type=bytes, value_type=bytes, key_serializer="raw",
                      value_serializer="raw", partitions=args.partitions)
    out = app.topic(args.out, key_serializer="raw", value_serializer="json",
                    partitions=args.partitions)
    w = args.workload
    if w == "filter_map":
        @app.agent(views)
        async def filter_map(stream: Any) -> None:
            async for key, value in stream.items():
                view = json.loads(value)
                if keep(view):
                    await out.send(key=key, value=mapped(view))
    elif w == "count":
        counts = app.Table("counts", default=int, partitions=args.partitions,
                           key_type=str, value_type=int)

        @app.agent(views)
        async def count(stream: Any) -> None:
            async for key, _value in stream.items():
                user = key.decode()
                counts[user] += 1
                await out.send(key=key, value=counts[user])
    elif w == "window_count":
        wcounts = app.Table("wcounts", default=int, partitions=args.partitions,
                            key_type=str, value_type=int).tumbling(
            timedelta(milliseconds=WINDOW_MS), expires=timedelta(hours=4)).relative_to_stream()

        @app.agent(views)
        async def window_count(stream: Any) -> None:
            async for event in stream.events():
                user = event.key.decode()
                wcounts[user] += 1
                start = window_start(round(event.message.timestamp * 1000))  # Faust: seconds
                await out.send(key=event.key,
                               value={"start": start, "count": wcounts[user].current()})
    elif w == "join":
        # The users table is pre-loaded through its changelog topic (written by the harness),
        # which Faust restores before the agents start: Faust's way of a pre-loaded table.
        users = app.Table("users", partitions=args.partitions, key_type=str)

        @app.agent(views)
        async def join(stream: Any) -> None:
            async for key, value in stream.items():
                user = users.get(key.decode())
                if user is not None:
                    await out.send(key=key, value=joined(json.loads(value), user))
    handshake()
    worker = faust.Worker(app, loglevel=level, quiet=True)
    worker.execute_from_commandline()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("framework", choices=("ours", "hand", "quix", "faust"))
    p.add_argument("workload", choices=("filter_map", "count", "window_count", "join"))
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--app-id", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--guarantee", default="at_least_once")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--cache-max-bytes", type=int,
                   help="ours: statestore.cache.max.bytes (0 disables the record cache)")
    p.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="ours: an extra KafkaStreams config entry (repeatable)")
    args = p.parse_args(argv)
    {"ours": run_ours, "hand": run_hand, "quix": run_quix, "faust": run_faust}[args.framework](
        args)


if __name__ == "__main__":
    main()
