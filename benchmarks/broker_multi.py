"""Multi-client loads for broker_perf.py: N producer or N consumer processes at once.

Each client is its own process (one librdkafka instance and one Python interpreter each, as N
applications would be), working on its own partition of an N-partition topic. Producers use
small batches and no linger (``batch.size`` 16384, ``linger.ms`` 0: the Java client's
defaults), so the broker answers many small requests; consumers each read back the records of
their partition. The clock runs from the moment every client is connected and waiting until
the last one is done; the broker's CPU time is taken over the same span, and the client CPU is
the sum over the client processes.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import time
from typing import Any

from bench_common import process_cpu_seconds

SMALL_BATCH_BYTES = 16384
SMALL_LINGER_MS = 0


def shares(total: int, clients: int) -> list[int]:
    """Records per client (partition i gets share i)."""
    return [total // clients + (1 if i < total % clients else 0) for i in range(clients)]


def _producer(bootstrap: str, topic: str, partition: int, count: int, size: int, acks: str,
              timeout: float, ready: Any, go: Any, out: Any) -> None:
    from confluent_kafka import Producer

    failures: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None and len(failures) < 100:
            failures.append(str(err))

    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": SMALL_LINGER_MS,
        "batch.size": SMALL_BATCH_BYTES, "compression.type": "none",
        "enable.idempotence": False, "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000, "message.timeout.ms": int(timeout * 1000),
        "delivery.report.only.error": True, "on_delivery": on_delivery,
        "enable.metrics.push": False,
    })
    producer.list_topics(topic, timeout=10)
    value = os.urandom(size)
    chunk = [{"value": value} for _ in range(min(count, 10_000))]
    ready.put(partition)
    go.wait()
    c0, t0 = time.process_time(), time.monotonic()
    sent = 0
    while sent < count:
        todo = chunk if count - sent >= len(chunk) else chunk[: count - sent]
        while todo:
            with contextlib.suppress(BufferError):  # failed entries get "_error"
                producer.produce_batch(topic, todo, partition=partition)
            retry = [m for m in todo if m.pop("_error", None) is not None]
            if retry:
                producer.poll(0.005)
            todo = retry
        sent += min(len(chunk), count - sent)
        producer.poll(0)
    left = producer.flush(timeout)
    t1 = time.monotonic()
    error = None
    if left:
        error = f"{left} records undelivered after {timeout:.0f}s"
    elif failures:
        error = f"{len(failures)} delivery failures, first: {failures[0]}"
    out.put((partition, count - left - len(failures), t0, t1, time.process_time() - c0, error))


def _consumer(bootstrap: str, topic: str, partition: int, count: int, size: int, acks: str,
              timeout: float, ready: Any, go: Any, out: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"broker-perf-multi-{partition}",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest", "enable.partition.eof": False,
        "enable.metrics.push": False, "fetch.queue.backoff.ms": 1,  # see fetch_load
    })
    consumer.list_topics(topic, timeout=10)
    ready.put(partition)
    go.wait()
    c0, t0 = time.process_time(), time.monotonic()
    consumer.assign([TopicPartition(topic, partition, 0)])
    got, error = 0, None
    deadline = t0 + timeout
    while got < count:
        for m in consumer.consume(num_messages=min(count - got, 10_000), timeout=1.0):
            if m.error() is not None:
                error = error or str(m.error())
            else:
                got += 1
        if time.monotonic() > deadline:
            error = error or f"partition {partition}: only {got} of {count} within {timeout:.0f}s"
            break
    t1 = time.monotonic()
    cpu = time.process_time() - c0
    consumer.close()
    out.put((partition, got, t0, t1, cpu, error))


def run_clients(kind: str, bootstrap: str, topic: str, total: int, clients: int, size: int,
                acks: str, timeout: float, broker_pid: int) -> dict[str, Any]:
    """Run ``clients`` producer or consumer processes; returns records, seconds, broker and
    client CPU seconds, and the first error."""
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    target = _producer if kind == "produce" else _consumer
    procs = [ctx.Process(target=target, daemon=True,
                         args=(bootstrap, topic, i, n, size, acks, timeout, ready, go, out))
             for i, n in enumerate(shares(total, clients))]
    for p in procs:
        p.start()
    results: list[tuple[int, int, float, float, float, str | None]] = []
    error: str | None = None
    try:
        for _ in procs:
            ready.get(timeout=60)
        b0 = process_cpu_seconds(broker_pid)
        go.set()
        deadline = time.monotonic() + timeout + 30
        while len(results) < len(procs):
            try:
                results.append(out.get(timeout=1.0))
            except queue.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    error = f"{len(dead)} client process(es) died" if dead else "timed out"
                    break
        broker_cpu = process_cpu_seconds(broker_pid) - b0
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    if not results:
        return {"records": 0, "seconds": 0.0, "broker_cpu_s": 0.0, "client_cpu_s": 0.0,
                "error": error or "no client finished"}
    error = error or next((r[5] for r in results if r[5]), None)
    return {
        "records": sum(r[1] for r in results),
        "seconds": max(r[3] for r in results) - min(r[2] for r in results),
        "broker_cpu_s": broker_cpu,
        "client_cpu_s": sum(r[4] for r in results),
        "error": error,
    }
