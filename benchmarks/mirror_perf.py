"""MirrorMaker 2: ours (`streams mirror`) against Apache Kafka's (connect-mirror 4.3.1), on the
same two brokers in the same run.

Run::

    python benchmarks/mirror_perf.py             # 3 rounds of 200k records of 100 B (~6 min)
    python benchmarks/mirror_perf.py --rounds 5  # medians over 5 rounds
    python benchmarks/mirror_perf.py --quick     # 1 round of 30k records, about 1 minute
    python benchmarks/mirror_perf.py --help

Two of our brokers (each its own process) are started once. Each round runs ours, then
Kafka's (never both at once), each on a topic of its own and as a source cluster alias of its
own (ours replicates ``A``, Kafka's ``K``: both the same broker, but separate Connect groups and
internal topics on the target, so neither reads the other's connector configs); the table gives
each side's medians over the rounds (alternating the sides evens out a machine whose load
drifts). Per round and side:

* **catch-up rate**: N records are written to A before the mirror starts; timed from the
  process start until B's replica holds N records (end offsets polled every 100 ms), so it
  includes start-up (the same for both: a distributed worker per flow and its internal topics);
  records/s = N / that time, and, to leave start-up out, the rate between the replica holding
  10 % and 90 % of N; over that same window, the CPU time of the mirror process (all its
  threads) per record replicated, which a busy shared machine disturbs far less than rates.
* **latency**: with the mirror running, records are written to A at ``--rate`` per second for
  ``--seconds``, each stamped with its send time (the timestamp MirrorMaker keeps); a consumer on
  B reads the replica and takes now - timestamp per record: p50 and p99.

Kafka's MirrorMaker runs from tests/reference/connect's jars (``make connect-reference``; needs
java and mvn, else only ours runs), in a JVM started as ``connect-mirror-maker.sh`` starts it
(``--kafka-jvm tests``: the reference tests' small JVM, C1 JIT only, which flatters ours). Both
sides get the same settings: one task, offset flush every second, Kafka's other defaults. The target ≥ 0.7x Kafka's rate is reported, not enforced.
Every process started is stopped on exit. Exit status 0 when both sides ran.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_common import REPO_ROOT, Processes, process_cpu_seconds, repo_env, start_broker

sys.path.insert(0, str(REPO_ROOT))

# The JVM as connect-mirror-maker.sh starts it: its KAFKA_HEAP_OPTS and kafka-run-class.sh's
# KAFKA_JVM_PERFORMANCE_OPTS (Kafka 4.x bin/ scripts).
SHIPPED_JVM = ["-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

FACTORS = ("replication.factor", "checkpoints.topic.replication.factor",
           "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
           "offset.storage.replication.factor", "status.storage.replication.factor",
           "config.storage.replication.factor")


def mm2_properties(path: Path, a: str, b: str, topic: str, alias: str = "A") -> Path:
    lines = {"clusters": f"{alias}, B", f"{alias}.bootstrap.servers": a,
             "B.bootstrap.servers": b, f"{alias}->B.enabled": "true",
             f"{alias}->B.topics": topic, f"B->{alias}.enabled": "false",
             "emit.heartbeats.enabled": "false", f"{alias}->B.emit.heartbeats.enabled": "true",
             "sync.topic.acls.enabled": "false", "refresh.topics.interval.seconds": "5",
             "offset.flush.interval.ms": "1000", "tasks.max": "1",
             **{key: "1" for key in FACTORS}}
    path.write_text("".join(f"{k} = {v}\n" for k, v in lines.items()))
    return path


async def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, count: int, size: int,
                   rate: float | None = None) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                max_batch_size=256 * 1024)
    await producer.start()
    try:
        payload = b"x" * size
        started = time.monotonic()
        futures = []
        for i in range(count):
            if rate:
                due = started + i / rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            futures.append(await producer.send(topic, payload, key=str(i).encode(),
                                               timestamp_ms=int(time.time() * 1000)))
            if len(futures) >= 5000:
                await asyncio.gather(*futures)
                futures = []
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def _replica_count(consumer: Any, topic: str) -> int:
    from aiokafka import TopicPartition

    await consumer._client.force_metadata_update()  # noqa: SLF001 - a topic that appears later
    parts = consumer.partitions_for_topic(topic) or set()
    if not parts:
        return 0
    ends = await consumer.end_offsets([TopicPartition(topic, p) for p in parts])
    return sum(ends.values())


async def _wait_count(bootstrap: str, topic: str, count: int, started: float,
                      timeout: float, pid: int) -> tuple[float, float, float, float]:
    """(seconds until ``count``, until 10 %, until 90 %) since ``started``, and the CPU
    seconds process ``pid`` used between 10 % and 90 %."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    marks: dict[float, tuple[float, float]] = {}
    try:
        while True:
            have = await _replica_count(consumer, topic)
            now = time.monotonic() - started
            for share in (0.1, 0.9):
                if share not in marks and have >= share * count:
                    marks[share] = (now, process_cpu_seconds(pid))
            if have >= count:
                return now, marks[0.1][0], marks[0.9][0], marks[0.9][1] - marks[0.1][1]
            if now > timeout:
                raise RuntimeError(f"{topic}: {have} of {count} records after {timeout:.0f} s")
            await asyncio.sleep(0.1)
    finally:
        await consumer.stop()


async def _latencies(bootstrap: str, topic: str, count: int, timeout: float) -> list[float]:
    """now - timestamp of the last ``count`` records to arrive in ``topic`` (read from its
    current end)."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="latest",
                                enable_auto_commit=False, group_id=f"lat-{time.time()}")
    await consumer.start()
    out: list[float] = []
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        ready.set()
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for msgs in (await consumer.getmany(timeout_ms=200)).values():
                now = time.time() * 1000
                out.extend(now - m.timestamp for m in msgs)
    finally:
        await consumer.stop()
    return out


ready = asyncio.Event()


async def _latency_round(a: str, b: str, source: str, replica: str, rate: float,
                         seconds: float, size: int) -> list[float]:
    global ready
    ready = asyncio.Event()
    count = int(rate * seconds)
    reader = asyncio.create_task(_latencies(b, replica, count, seconds + 120))
    await ready.wait()
    await _produce(a, source, count, size, rate)
    return await reader


def run_side(name: str, procs: Processes, work: Path, a: str, b: str, args: argparse.Namespace,
             start: Any, alias: str, round_no: int) -> dict[str, Any]:
    topic = f"bench-{name}-{round_no}"
    replica = f"{alias}.{topic}"
    asyncio.run(_create(a, topic, args.partitions))
    asyncio.run(_produce(a, topic, args.records, args.size))
    config = mm2_properties(work / f"{name}-{round_no}-mm2.properties", a, b, topic, alias)
    started = time.monotonic()
    proc = start(config)
    try:
        total, t10, t90, cpu = asyncio.run(_wait_count(b, replica, args.records, started, 600,
                                                       proc.pid))
        lat = asyncio.run(_latency_round(a, b, topic, replica, args.rate, args.seconds,
                                         args.size))
    finally:
        procs.stop(proc, timeout=30)
    lat.sort()
    return {"side": name, "round": round_no, "records": args.records,
            "seconds_to_all": round(total, 2),
            "records_per_s": round(args.records / total),
            "steady_records_per_s": round(0.8 * args.records / max(t90 - t10, 1e-3)),
            "cpu_us_per_record": round(1e6 * cpu / (0.8 * args.records), 1),
            "latency_p50_ms": round(statistics.median(lat), 1) if lat else None,
            "latency_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 1) if lat else None,
            "latency_samples": len(lat)}


METRICS = ("seconds_to_all", "records_per_s", "steady_records_per_s", "cpu_us_per_record",
           "latency_p50_ms", "latency_p99_ms")


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """A side's median of each figure over its rounds."""
    out: dict[str, Any] = {"side": rounds[0]["side"], "rounds": len(rounds)}
    for key in METRICS:
        values = [r[key] for r in rounds if r[key] is not None]
        out[key] = round(statistics.median(values), 1) if values else None
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rate", type=float, default=2000, help="records/s in the latency round")
    parser.add_argument("--seconds", type=float, default=10, help="length of the latency round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (medians)")
    parser.add_argument("--sides", choices=("both", "ours", "kafka"), default="both",
                        help="run only one side (e.g. ours before and after a change)")
    parser.add_argument("--kafka-jvm", choices=("shipped", "tests"), default="shipped",
                        help="Kafka's JVM options: connect-mirror-maker.sh's (G1, C2 JIT, 2 GB "
                             "heap) or the reference tests' (serial GC, C1 JIT only, 384 MB)")
    parser.add_argument("--quick", action="store_true",
                        help="1 round, 30k records, 5 s latency round")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.quick:
        args.records, args.seconds, args.rounds = 30_000, 5, 1
    procs = Processes()
    rounds: dict[str, list[dict[str, Any]]] = {"ours": [], "kafka": []}
    with tempfile.TemporaryDirectory(prefix="mirror-perf-") as tmp:
        work = Path(tmp)
        try:
            (work / "a").mkdir()
            (work / "b").mkdir()
            a, _ = start_broker(procs, work / "a")
            b, _ = start_broker(procs, work / "b")

            def ours(config: Path) -> Any:
                return procs.start([sys.executable, "-m", "streams.cli.main", "mirror",
                                    str(config)], work / "ours.log", **repo_env())

            from tests.reference import connect as kconnect

            reason = "--sides ours" if args.sides == "ours" else kconnect.unavailable()
            if reason:
                print(f"Kafka's MirrorMaker skipped: {reason}")

            if args.kafka_jvm == "shipped":
                kconnect.JAVA_OPTS = SHIPPED_JVM  # read by JavaProcess.start

            def kafka(config: Path) -> Any:
                java = kconnect.JavaProcess("kafka-mm2", work,
                                            "org.apache.kafka.connect.mirror.MirrorMaker",
                                            str(config)).start()
                assert java.proc is not None
                return java.proc

            for round_no in range(1, args.rounds + 1):
                if args.sides != "kafka":
                    result = run_side("ours", procs, work, a, b, args, ours, "A", round_no)
                    rounds["ours"].append(result)
                    print(json.dumps(result), flush=True)
                if not reason:
                    result = run_side("kafka", procs, work, a, b, args, kafka, "K", round_no)
                    rounds["kafka"].append(result)
                    print(json.dumps(result), flush=True)
        finally:
            procs.close()
    results = [medians(r) for r in rounds.values() if r]
    print(f"MirrorMaker 2, {args.records} records of {args.size} B over {args.partitions} "
          f"partitions, our broker -> our broker (each its own process); latency at "
          f"{args.rate:.0f} records/s for {args.seconds:.0f} s; medians of {args.rounds} "
          f"round(s); Kafka's JVM options: {args.kafka_jvm}")
    print(f"{'side':8} {'to all (s)':>10} {'records/s':>10} {'10-90% rec/s':>13} "
          f"{'CPU us/rec':>11} {'p50 ms':>8} {'p99 ms':>8}")
    for r in results:
        print(f"{r['side']:8} {r['seconds_to_all']:>10} {r['records_per_s']:>10} "
              f"{r['steady_records_per_s']:>13} {r['cpu_us_per_record']:>11} "
              f"{r['latency_p50_ms']:>8} {r['latency_p99_ms']:>8}")
    if len(results) == 2 and args.sides == "both":
        ratio = results[0]["steady_records_per_s"] / results[1]["steady_records_per_s"]
        each = [o["steady_records_per_s"] / k["steady_records_per_s"]
                for o, k in zip(rounds["ours"], rounds["kafka"], strict=True)]
        print(f"ours / Kafka (10-90 % rate, medians): {ratio:.2f}x "
              f"({'pass' if ratio >= 0.7 else 'short'} of the 0.7x target); per round: "
              + ", ".join(f"{x:.2f}x" for x in each))
    if args.json:
        Path(args.json).write_text(json.dumps({"medians": results, "rounds": rounds},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
