"""The ``streams`` Spark sink: ``df.write`` / ``df.writeStream`` into broker topics, like Spark's
``kafka`` sink, at-least-once and exactly-once.

Records are read back with confluent-kafka (librdkafka), an independent client. The kill tests
run a streaming query in a child process (its own SparkSession) and SIGKILL it while it writes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from helpers import EmbeddedBroker, create_topics, wait_until
from topic_reader import read_topic

from streams.spark.sink_options import (
    EXACTLY_ONCE_V2,
    SinkOptionError,
    check_input_schema,
    parse_sink_options,
)

SPARK_DIR = Path(__file__).parent
def writer(df: Any, bootstrap: str, **options: str) -> Any:
    builder = df.write.format("streams").mode("append").option("kafka.bootstrap.servers",
                                                                bootstrap)
    for key, value in options.items():
        builder = builder.option(key, value)
    return builder


# ---- batch writes ----------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("guarantee", ["at_least_once", EXACTLY_ONCE_V2])
def test_batch_write_typed_and_binary_columns(spark: Any, broker: Any, guarantee: str) -> None:
    topic = f"typed-{guarantee}"
    create_topics(broker.bootstrap, {topic: 3})
    # Recent timestamps: the broker's first retention pass, 30 s after it starts
    # (log.initial.task.delay.ms), deletes records older than the topic's 7 days.
    base = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=1)
    rows = [(f"k{i}" if i % 7 else None, f"value-{i}", base + dt.timedelta(milliseconds=i))
            for i in range(500)]
    df = spark.createDataFrame(rows, "key string, value string, timestamp timestamp") \
        .repartition(4)
    writer(df, broker.bootstrap, topic=topic, **{"processing.guarantee": guarantee}).save()

    got = read_topic(broker.bootstrap, topic)
    assert len(got) == 500
    by_value = {value: (part, key, ts) for part, _, key, value, ts, _ in got}
    base_ms = int(base.timestamp() * 1000)
    for i, (key, value, _) in enumerate(rows):
        part, got_key, ts = by_value[value.encode()]
        assert got_key == (key.encode() if key else None)
        assert ts == base_ms + i
    # Keyed rows land where Kafka's Java producer would put them (murmur2), as Spark's sink.
    from streams.kafka.batching import default_partition
    for part, _, key, _value, _, _ in got:
        if key is not None:
            assert part == default_partition(key, 3)

    # Binary columns, the topic from a column, partitions and headers kept.
    create_topics(broker.bootstrap, {f"{topic}-a": 2, f"{topic}-b": 2})
    binary = [(bytes([i % 256, 0, 255]), f"{topic}-a" if i % 2 else f"{topic}-b", i % 2,
               [("h", bytes([i % 256])), ("empty", None)] if i % 3 else None)
              for i in range(200)]
    bdf = spark.createDataFrame(
        binary, "value binary, topic string, partition int, "
                "headers array<struct<key:string,value:binary>>")
    writer(bdf, broker.bootstrap, **{"processing.guarantee": guarantee}).save()
    for name, parity in ((f"{topic}-a", 1), (f"{topic}-b", 0)):
        got = read_topic(broker.bootstrap, name)
        expected = sorted((value, part, headers or []) for value, t, part, headers in binary
                          if t == name)
        assert sorted((value, part, headers) for part, _, _, value, _, headers in got) == \
            expected
        assert {part for part, *_ in got} == {parity}


@pytest.mark.spark
def test_bad_input_is_refused_by_name(spark: Any, broker: Any, tmp_path: Path) -> None:
    create_topics(broker.bootstrap, {"bad": 1})
    ok = spark.createDataFrame([("v",)], "value string")

    def fails(df: Any, match: str, **options: str) -> None:
        with pytest.raises(Exception, match=match):
            writer(df, broker.bootstrap, **options).save()

    fails(spark.createDataFrame([("v",)], "payload string"), r"needs a 'value' column",
          topic="bad")
    fails(spark.createDataFrame([(1,)], "value int"), r"column 'value' must be string or "
          r"binary, got int", topic="bad")
    fails(spark.createDataFrame([("v", 1)], "value string, key bigint"),
          r"column 'key' must be string or binary", topic="bad")
    fails(ok, r"set the option 'topic' or give the DataFrame a 'topic' column")
    fails(ok, r"unknown option 'kafka.lingerms'", topic="bad", **{"kafka.lingerMs": "5"})
    fails(ok, r"option 'processing.guarantee' must be", topic="bad",
          **{"processing.guarantee": "exactly_once"})
    assert read_topic(broker.bootstrap, "bad") == []


@pytest.mark.spark
def test_unknown_topic_and_oversized_record_leave_nothing_visible(spark: Any,
                                                                  tmp_path: Path) -> None:
    strict = EmbeddedBroker(tmp_path / "strict", auto_create_topics_enable=False).start()
    try:
        bootstrap = strict.bootstrap
        create_topics(bootstrap, {"known": 2})
        df = spark.createDataFrame([(f"v{i}",) for i in range(50)], "value string")
        with pytest.raises(Exception, match=r"topic 'missing' does not exist and the broker "
                                            r"does not create topics automatically"):
            writer(df, bootstrap, topic="missing").save()
        # Through a topic column the check is in the tasks; exactly-once aborts the whole job.
        mixed = spark.createDataFrame([("known" if i != 40 else "missing", f"v{i}")
                                       for i in range(50)], "topic string, value string") \
            .coalesce(1)
        with pytest.raises(Exception, match=r"topic 'missing' does not exist"):
            writer(mixed, bootstrap, **{"processing.guarantee": EXACTLY_ONCE_V2}).save()
        big = spark.createDataFrame([("v",)] * 10 + [("x" * 5000,)], "value string") \
            .repartition(2)
        with pytest.raises(Exception, match=r"is \d+ bytes, larger than kafka.max.request.size "
                                            r"\(4096\)"):
            writer(big, bootstrap, topic="known",
                   **{"kafka.max.request.size": "4096",
                      "processing.guarantee": EXACTLY_ONCE_V2}).save()
        assert read_topic(bootstrap, "known") == []
    finally:
        strict.stop()


# ---- option rules (no Spark) -----------------------------------------------------------------


def test_sink_option_rules() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "topic": "t"}
    parsed = parse_sink_options(base)
    assert (parsed.topic, parsed.guarantee, parsed.producer.acks) == ("t", "at_least_once", "all")
    tuned = parse_sink_options({**base, "kafka.linger.ms": "20", "kafka.compression.type": "lz4",
                                "kafka.max.request.size": "2048", "kafka.acks": "1"})
    kwargs = tuned.producer.producer_kwargs()
    assert (kwargs["linger_ms"], kwargs["compression_type"], kwargs["max_request_size"],
            kwargs["acks"]) == (20, "lz4", 2048, 1)
    with pytest.raises(SinkOptionError, match="exactly_once_v2 needs kafka.acks=all"):
        parse_sink_options({**base, "kafka.acks": "1", "processing.guarantee": EXACTLY_ONCE_V2})
    with pytest.raises(SinkOptionError, match="'kafka.value.serializer' is not supported"):
        parse_sink_options({**base, "kafka.value.serializer": "x"})
    with pytest.raises(SinkOptionError, match="'kafka.bootstrap.servers' .* is required"):
        parse_sink_options({"topic": "t"})
    with pytest.raises(SinkOptionError, match="'kafka.batch.size' must be a positive integer"):
        parse_sink_options({**base, "kafka.batch.size": "0"})
    with pytest.raises(SinkOptionError, match="'kafka.compression.type' must be one of"):
        parse_sink_options({**base, "kafka.compression.type": "brotli"})
    # kafka.<producer key>: converted by streams/kafka's one client table (acks=-1 is all, a
    # boolean must be one), the sink's own two keys beside them, any other refused by name.
    mapped = parse_sink_options({**base, "kafka.acks": "-1", "kafka.batch.size": "1000",
                                 "kafka.compression.type": "none",
                                 "kafka.enable.idempotence": "TRUE",
                                 "kafka.transaction.timeout.ms": "60000",
                                 "kafka.max.block.ms": "2000"}).producer
    kwargs = mapped.producer_kwargs()
    assert (kwargs["acks"], kwargs["max_batch_size"], kwargs["compression_type"],
            kwargs["enable_idempotence"]) == ("all", 1000, None, True)
    assert (mapped.transaction_timeout_ms, mapped.max_block_ms) == (60_000, 2000)
    assert "transaction_timeout_ms" not in kwargs  # only the exactly-once producers get it
    with pytest.raises(SinkOptionError, match="'kafka.enable.idempotence' must be true or false"):
        parse_sink_options({**base, "kafka.enable.idempotence": "yes"})
    with pytest.raises(SinkOptionError, match="'kafka.acks' must be all, -1, 0 or 1"):
        parse_sink_options({**base, "kafka.acks": "2"})
    for not_honoured in ("kafka.buffer.memory", "kafka.delivery.timeout.ms",
                         "kafka.metadata.max.age.ms"):
        with pytest.raises(SinkOptionError, match=f"unknown option '{not_honoured}'"):
            parse_sink_options({**base, not_honoured: "1"})

    from pyspark.sql.types import StructType
    schema = StructType.fromJson
    check_input_schema(schema({"type": "struct", "fields": [
        {"name": "value", "type": "binary", "nullable": True, "metadata": {}}]}), parsed)
    with pytest.raises(SinkOptionError, match="column 'headers' must be"):
        check_input_schema(schema({"type": "struct", "fields": [
            {"name": "value", "type": "binary", "nullable": True, "metadata": {}},
            {"name": "headers", "type": "string", "nullable": True, "metadata": {}}]}), parsed)
    with pytest.raises(SinkOptionError, match="column 'partition' must be int, got bigint"):
        check_input_schema(schema({"type": "struct", "fields": [
            {"name": "value", "type": "binary", "nullable": True, "metadata": {}},
            {"name": "partition", "type": "long", "nullable": True, "metadata": {}}]}), parsed)


# ---- the exactly-once commit protocol, step by step (tasks and driver called directly) --------


def _task_input(batch: int, partition: int) -> list[pa.RecordBatch]:
    values = [f"b{batch}-p{partition}-{i}".encode() for i in range(20)]
    return [pa.record_batch([pa.array(values[:7], pa.binary())], names=["value"]),
            pa.record_batch([pa.array(values[7:], pa.binary())], names=["value"])]


def _expected(batches: range) -> list[bytes]:
    return sorted(f"b{b}-p{p}-{i}".encode() for b in batches for p in (0, 1) for i in range(20))


def test_exactly_once_protocol_survives_a_driver_death_at_each_step(
        broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What Spark does around a micro-batch, with the driver "dying" (the call raising and
    everything after it skipped) before, inside and after its commit decision; then the
    restarted query replays the batch, as Spark does when its commit log lacks the batch."""
    from streams.spark import sink

    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"eos": 2})
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": "eos",
                                  "processing.guarantee": EXACTLY_ONCE_V2,
                                  "checkpointLocation": str(tmp_path / "checkpoint")})

    def run_tasks(batch: int) -> list[Any]:
        # Spark builds the writer once per query run, and again for every commit call.
        return [sink.StreamsStreamWriter(options).write_task(iter(_task_input(batch, p)), p,
                                                             "query-1", batch)
                for p in (0, 1)]

    def committed() -> list[bytes]:
        return sorted(value for *_, value, _ts, _h in read_topic(bootstrap, "eos"))

    class DriverKilled(BaseException):
        pass

    # Batch 0: the driver dies before commit(): the tasks' transactions stay open, invisible.
    run_tasks(0)
    assert committed() == []
    # The replay's tasks fence them (InitProducerId aborts them) and write batch 0 again.
    sink.StreamsStreamWriter(options).commit(run_tasks(0), 0)
    assert committed() == _expected(range(1))

    # Batch 1: the driver dies after its decision and after committing one task's transaction.
    messages = run_tasks(1)
    real_end = sink.end_transactions

    def first_then_die(settings: Any, transactions: Any, commit: bool) -> dict[str, int]:
        real_end(settings, list(transactions)[:1], commit)
        raise DriverKilled

    monkeypatch.setattr(sink, "end_transactions", first_then_die)
    with pytest.raises(DriverKilled):
        sink.StreamsStreamWriter(options).commit(messages, 1)
    monkeypatch.setattr(sink, "end_transactions", real_end)
    assert len(committed()) == 40 + 20  # batch 0 and one partition of batch 1
    # The replay recognises batch 1: one task finds its transaction committed, the other
    # commits the transaction its first attempt left open; neither writes again.
    replay = run_tasks(1)
    assert [(m.replayed, m.rows) for m in replay] == [(True, 0), (True, 0)]
    sink.StreamsStreamWriter(options).commit(replay, 1)
    assert committed() == _expected(range(2))

    # Batch 2: decided, but before any EndTxn partition 1's transaction is aborted by the
    # broker (here: fenced by a new producer with its transactional id, as a timeout does).
    messages = run_tasks(2)

    def die(settings: Any, transactions: Any, commit: bool) -> dict[str, int]:
        raise DriverKilled

    monkeypatch.setattr(sink, "end_transactions", die)
    with pytest.raises(DriverKilled):
        sink.StreamsStreamWriter(options).commit(messages, 2)
    monkeypatch.setattr(sink, "end_transactions", real_end)

    async def fence(transactional_id: str) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                    transactional_id=transactional_id)
        await producer.start()
        await producer.stop()

    asyncio.run(fence(messages[1].transaction[0]))
    replay = run_tasks(2)
    assert [(m.replayed, m.rows) for m in replay] == [(True, 0), (False, 20)]
    sink.StreamsStreamWriter(options).commit(replay, 2)
    assert committed() == _expected(range(3))
    # Nothing is left open: read_uncommitted sees the same rows plus the aborted ones.
    uncommitted = sorted(value for *_, value, _ts, _h in
                         read_topic(bootstrap, "eos", "read_uncommitted"))
    assert set(uncommitted) == set(_expected(range(3)))


# ---- a streaming query killed mid-batch ------------------------------------------------------


class Watermarks:
    """Sums over a topic's partitions of the high watermark and of the last stable offset
    (librdkafka answers ListOffsets with the consumer's isolation level)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.tps = [CTopicPartition(topic, p) for p in range(partitions)]
        self.consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                                    "isolation.level": level})
                          for level in ("read_uncommitted", "read_committed")]

    def __call__(self) -> tuple[int, int]:
        high, stable = (sum(c.get_watermark_offsets(tp, 10, cached=False)[1] for tp in self.tps)
                        for c in self.consumers)
        return high, stable

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()


def _run_app(bootstrap: str, checkpoints: Path, log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            [sys.executable, str(SPARK_DIR / "sink_query_app.py"), bootstrap, "source",
             str(checkpoints)], stdout=log_file, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)  # two Spark start-ups in child processes; slow on a loaded machine
def test_streaming_query_killed_mid_batch(broker: Any, tmp_path: Path) -> None:
    """SIGKILL (the driver's Python process, its JVM and its workers: the whole process group)
    while the exactly-once query has a transaction open, restart from the checkpoints: the
    exactly-once target holds every input row exactly once under read_committed, and the
    at-least-once query, run after it in the same driver, every input row at least once (the
    app runs one query at a time: sink_query_app.py says why)."""
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"source": 2, "target-alos": 2, "target-eos": 2})
    total = 12_000

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
        await producer.start()
        try:
            for start in range(0, total, 1000):
                batch = [await producer.send("source", key=f"k{i % 97}".encode(),
                                             value=f"row-{i}".encode())
                         for i in range(start, start + 1000)]
                await asyncio.gather(*batch)
        finally:
            await producer.stop()

    asyncio.run(produce())
    checkpoints = tmp_path / "checkpoints"
    log_path = tmp_path / "app.log"
    app = _run_app(bootstrap, checkpoints, log_path)
    try:
        # Kill while the exactly-once target has records of an undecided micro-batch
        # (high watermark above the last stable offset) and output is part way.
        watermarks = Watermarks(bootstrap, "target-eos", 2)

        def mid_batch() -> bool:
            assert app.poll() is None, log_path.read_text()[-3000:]
            high, stable = watermarks()
            # a task's whole output pending: the driver has not begun to commit the batch
            return stable > 0 and high - stable >= 900

        try:
            # The driver may still commit between the check and the kill: then kill again
            # in a later micro-batch of the restarted query.
            for _kill in range(3):
                wait_until(mid_batch, 300, interval=0.02,
                           message="an open transaction on target-eos")
                os.killpg(app.pid, signal.SIGKILL)
                app.wait(30)
                high, stable = watermarks()
                if high > stable:
                    break  # the kill left a transaction open
                app = _run_app(bootstrap, checkpoints, log_path)
            assert high > stable, "no kill landed while a transaction was open"
        finally:
            watermarks.close()
        app = _run_app(bootstrap, checkpoints, log_path)
        assert app.wait(600) == 0, log_path.read_text()[-3000:]
        assert "DONE" in log_path.read_text()
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait(30)

    expected = sorted(f"row-{i}".encode() for i in range(total))
    eos = sorted(value for *_, value, _ts, _h in read_topic(bootstrap, "target-eos"))
    assert eos == expected
    alos = [value for *_, value, _ts, _h in read_topic(bootstrap, "target-alos")]
    assert set(alos) == set(expected)
    assert len(alos) >= total


def test_task_refuses_bad_rows_before_sending_any(broker: Any) -> None:
    """Checks a task makes on each Arrow batch, before any of its records is sent."""
    from streams.spark.kafka_write import write_partition

    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"rows": 2})
    settings = parse_sink_options({"kafka.bootstrap.servers": bootstrap}).producer

    def batch(**columns: pa.Array) -> pa.RecordBatch:
        return pa.record_batch(list(columns.values()), names=list(columns))

    values = pa.array([b"a", b"b", b"c"])
    with pytest.raises(SinkOptionError, match=r"column 'partition' has 5, but topic 'rows' has "
                                              r"partitions 0 to 1"):
        write_partition(iter([batch(value=values, partition=pa.array([0, 5, 1], pa.int32()))]),
                        settings, "rows", None)
    with pytest.raises(SinkOptionError, match=r"column 'topic' has a null value"):
        write_partition(iter([batch(value=values, topic=pa.array(["rows", None, "rows"]))]),
                        settings, None, None)
    assert read_topic(bootstrap, "rows", "read_uncommitted") == []
    # An empty task opens no producer and no transaction.
    empty = write_partition(iter([batch(value=pa.array([], pa.binary()))]), settings, "rows",
                            "streams-spark-empty-0")
    assert (empty.rows, empty.transaction) == (0, None)
