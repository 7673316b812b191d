"""The ``streams`` Spark source: batch and streaming reads of broker topics, like Spark's ``kafka``.

Every Spark test uses the session-scoped ``spark`` fixture, which never registers the data source:
``format("streams")`` resolves through the ``pyspark_streams`` module alone. Records are produced
with aiokafka against a fresh embedded broker per test; waits poll the broker, never sleep.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, RecordsToDelete
from helpers import RECENT_TS, create_topics, wait_until

from streams.spark.kafka_read import DataLossError, Range, read_range
from streams.spark.source import StreamsStreamReader
from streams.spark.source_offsets import (
    SourceOptionError,
    cap_offsets,
    parse_options,
    resolve_spec,
)

# Recent, so the broker's retention (7 days, first pass 30 s after start) keeps them.
BASE_TS = RECENT_TS  # ms

EXPECTED_COLUMNS = [
    ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
    ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int"),
    ("headers", "array<struct<key:string,value:binary>>"),
]


# ---- producing ------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int = 3) -> None:
    create_topics(bootstrap, {topic: partitions})


def admin_call(bootstrap: str, call: str, *args: Any) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await getattr(admin, call)(*args)
        finally:
            await admin.close()

    asyncio.run(run())


def produce(bootstrap: str, topic: str, records: Iterable[dict[str, Any]]) -> None:
    """Send ``records`` (kwargs of ``AIOKafkaProducer.send``) and wait for every ack."""

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(topic, **record) for record in records]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def produce_transactions(bootstrap: str, topic: str,
                         transactions: Sequence[tuple[str, list[bytes]]],
                         partition: int = 0) -> None:
    """Run ``transactions``: ("commit" | "abort", values) in order, by one transactional producer."""

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"tx-{topic}")
        await producer.start()
        try:
            for outcome, values in transactions:
                await producer.begin_transaction()
                for value in values:
                    await producer.send_and_wait(topic, value=value, partition=partition)
                if outcome == "commit":
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())


def end_offsets(bootstrap: str, topic: str, partitions: int,
                isolation: str = "read_committed") -> list[int]:
    async def run() -> list[int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            found = await consumer.end_offsets(tps)
            return [found[tp] for tp in tps]
        finally:
            await consumer.stop()

    return asyncio.run(run())


def wait_for_ends(bootstrap: str, topic: str, expected: list[int]) -> None:
    """Poll until the read_committed end offsets (LSOs) reach ``expected`` (markers written)."""
    wait_until(lambda: end_offsets(bootstrap, topic, len(expected)) == expected, 30,
               message=f"end offsets {expected} of {topic}")


def plain_records(count: int, partitions: int = 3, prefix: str = "v") -> list[dict[str, Any]]:
    return [{"key": f"k{i}".encode(), "value": f"{prefix}{i}".encode(), "partition": i % partitions,
             "timestamp_ms": BASE_TS + i} for i in range(count)]


# ---- reading --------------------------------------------------------------------------------


def reader(spark: Any, bootstrap: str, topic: str, stream: bool = False, **options: str) -> Any:
    builder = (spark.readStream if stream else spark.read).format("streams")
    builder = builder.option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in options.items():
        builder = builder.option(key, value)
    return builder.load()


def positions(df: Any) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def values(df: Any) -> list[bytes]:
    return [bytes(r.value) for r in df.orderBy("partition", "offset").select("value").collect()]


def run_available_now(spark: Any, bootstrap: str, topic: str, checkpoint: Path,
                      **options: str) -> list[list[tuple[int, int, bytes]]]:
    """One ``trigger(availableNow=True)`` run; returns each micro-batch's (partition, offset, value)."""
    batches: list[list[tuple[int, int, bytes]]] = []

    def collect(df: Any, batch_id: int) -> None:
        rows = df.select("partition", "offset", "value").collect()
        batches.append(sorted((r.partition, r.offset, bytes(r.value)) for r in rows))

    query = (reader(spark, bootstrap, topic, stream=True, **options)
             .writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True)
             .start())
    try:
        assert query.awaitTermination(120), "availableNow query did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    return [batch for batch in batches if batch]


# ---- batch ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_batch_reads_every_record_with_kafka_columns(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "events")
    records = plain_records(300)
    records[0]["key"] = None
    records[1]["headers"] = [("trace", b"abc"), ("empty", None)]
    records[4]["headers"] = [("trace", b"def")]
    produce(broker.bootstrap, "events", records)

    df = reader(spark, broker.bootstrap, "events")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == EXPECTED_COLUMNS
    assert df.count() == 300

    rows = df.selectExpr("key", "value", "topic", "partition", "offset",
                         "unix_millis(timestamp) AS ms", "timestampType", "headers").collect()
    assert len(rows) == 300
    by_value = {bytes(r.value): r for r in rows}
    for i, record in enumerate(records):
        row = by_value[record["value"]]
        assert row.key == record["key"]
        assert (row.topic, row.partition, row.ms, row.timestampType) == \
            ("events", i % 3, BASE_TS + i, 0)
        expected_headers = [(k, v) for k, v in record.get("headers", [])] or None
        got = None if row.headers is None else \
            [(h.key, None if h.value is None else bytes(h.value)) for h in row.headers]
        assert got == expected_headers
    # Offsets are dense per partition: 0..99 each.
    assert sorted((r.partition, r.offset) for r in rows) == \
        [(p, o) for p in range(3) for o in range(100)]


@pytest.mark.spark
def test_starting_and_ending_offsets_select_ranges(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "ranges")
    produce(broker.bootstrap, "ranges", plain_records(30))  # 10 per partition

    df = reader(spark, broker.bootstrap, "ranges",
                startingOffsets=json.dumps({"ranges": {"0": 2, "1": -2, "2": -1}}),
                endingOffsets=json.dumps({"ranges": {"0": 5, "1": 7, "2": -1}}))
    assert positions(df) == [(0, 2), (0, 3), (0, 4)] + [(1, o) for o in range(7)]

    assert reader(spark, broker.bootstrap, "ranges", startingOffsets="latest").count() == 0
    assert reader(spark, broker.bootstrap, "ranges", endingOffsets=json.dumps(
        {"ranges": {"0": 1, "1": 0, "2": -1}})).count() == 1 + 0 + 10
    # subscribePattern and assign pick partitions like Spark's Kafka source.
    pattern = (spark.read.format("streams").option("bootstrap.servers", broker.bootstrap)
               .option("subscribePattern", "rang.*").load())
    assert pattern.count() == 30
    assigned = (spark.read.format("streams").option("bootstrap.servers", broker.bootstrap)
                .option("assign", json.dumps({"ranges": [1]})).load())
    assert positions(assigned) == [(1, o) for o in range(10)]


@pytest.mark.spark
def test_invalid_options_fail_clearly(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "opts")

    def load(**options: str) -> Any:
        builder = spark.read.format("streams")
        for key, value in options.items():
            builder = builder.option(key, value)
        return builder.load().count()

    with pytest.raises(Exception, match=r"'kafka.bootstrap.servers' \(or 'bootstrap.servers'\) "
                                        r"is required"):
        load(subscribe="opts")
    with pytest.raises(Exception, match=r"option 'startingOffsets' must be 'earliest', 'latest' "
                                        r"or JSON"):
        load(**{"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "opts",
                "startingOffsets": "newest"})
    with pytest.raises(Exception, match=r"'startingOffsets': it does not give an offset for "
                                        r"opts-1, opts-2"):
        load(**{"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "opts",
                "startingOffsets": '{"opts": {"0": 0}}'})
    with pytest.raises(Exception, match=r"'kafka.isolation.level' must be 'read_committed'"):
        load(**{"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "opts",
                "kafka.isolation.level": "serializable"})
    with pytest.raises(Exception, match=r"unknown option 'startingoffset'"):
        load(**{"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "opts",
                "startingOffset": "earliest"})


@pytest.mark.spark
def test_read_committed_hides_aborted_and_open_transactions(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "txns", partitions=1)
    produce_transactions(broker.bootstrap, "txns", [
        ("commit", [b"c1", b"c2"]), ("abort", [b"a1", b"a2", b"a3"]), ("commit", [b"c3"]),
    ])
    # 2 + marker, 3 + marker, 1 + marker
    wait_for_ends(broker.bootstrap, "txns", [9])

    assert values(reader(spark, broker.bootstrap, "txns")) == [b"c1", b"c2", b"c3"]
    uncommitted = reader(spark, broker.bootstrap, "txns",
                         **{"kafka.isolation.level": "read_uncommitted"})
    assert values(uncommitted) == [b"c1", b"c2", b"a1", b"a2", b"a3", b"c3"]

    # An open transaction holds read_committed ranges back at its first offset (the LSO) ...
    async def open_transaction() -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="open")
        await producer.start()
        await producer.begin_transaction()
        await producer.send_and_wait("txns", value=b"pending", partition=0)
        return producer

    loop = asyncio.new_event_loop()
    try:
        producer = loop.run_until_complete(open_transaction())
        produce(broker.bootstrap, "txns", [{"value": b"plain", "partition": 0}])
        assert values(reader(spark, broker.bootstrap, "txns")) == [b"c1", b"c2", b"c3"]
        # ... and read_uncommitted sees up to the high watermark.
        assert values(reader(spark, broker.bootstrap, "txns",
                             **{"kafka.isolation.level": "read_uncommitted"}))[-2:] == \
            [b"pending", b"plain"]
        loop.run_until_complete(producer.commit_transaction())
        loop.run_until_complete(producer.stop())
    finally:
        loop.close()
    wait_for_ends(broker.bootstrap, "txns", [12])
    assert values(reader(spark, broker.bootstrap, "txns"))[-2:] == [b"pending", b"plain"]


# ---- streaming ------------------------------------------------------------------------------


@pytest.mark.spark
def test_available_now_reads_committed_records_once_across_runs(spark: Any, broker: Any,
                                                              tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "stream")
    produce(bootstrap, "stream", plain_records(30, prefix="first-"))
    produce_transactions(bootstrap, "stream", [("abort", [b"aborted"]), ("commit", [b"tx"])],
                         partition=1)
    wait_for_ends(bootstrap, "stream", [10, 14, 10])
    checkpoint = tmp_path / "checkpoint"

    first = run_available_now(spark, bootstrap, "stream", checkpoint, startingOffsets="earliest")
    got = [row for batch in first for row in batch]
    assert sorted(value for _, _, value in got) == \
        sorted([f"first-{i}".encode() for i in range(30)] + [b"tx"])

    produce(bootstrap, "stream", plain_records(15, prefix="second-"))
    wait_for_ends(bootstrap, "stream", [15, 19, 15])
    second = run_available_now(spark, bootstrap, "stream", checkpoint, startingOffsets="earliest")
    got = [row for batch in second for row in batch]
    assert sorted(value for _, _, value in got) == sorted(f"second-{i}".encode() for i in range(15))

    # Nothing new: a third run reads nothing.
    assert run_available_now(spark, bootstrap, "stream", checkpoint) == []


@pytest.mark.spark
def test_max_offsets_per_trigger_splits_into_batches(spark: Any, broker: Any,
                                                     tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "limited")
    produce(bootstrap, "limited", plain_records(70))
    wait_for_ends(bootstrap, "limited", [24, 23, 23])

    batches = run_available_now(spark, bootstrap, "limited", tmp_path / "checkpoint",
                                startingOffsets="earliest", maxOffsetsPerTrigger="20")
    assert [len(batch) for batch in batches] == [20, 20, 20, 10]
    rows = [row for batch in batches for row in batch]
    assert sorted((p, o) for p, o, _ in rows) == \
        [(p, o) for p, n in enumerate([24, 23, 23]) for o in range(n)]


@pytest.mark.spark
def test_stream_starts_at_latest_by_default(spark: Any, broker: Any, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "fresh", partitions=2)
    produce(bootstrap, "fresh", plain_records(10, partitions=2, prefix="old-"))
    checkpoint = tmp_path / "checkpoint"
    assert run_available_now(spark, bootstrap, "fresh", checkpoint) == []
    produce(bootstrap, "fresh", plain_records(4, partitions=2, prefix="new-"))
    wait_for_ends(bootstrap, "fresh", [7, 7])
    batches = run_available_now(spark, bootstrap, "fresh", checkpoint)
    assert sorted(v for batch in batches for _, _, v in batch) == \
        [f"new-{i}".encode() for i in range(4)]


# ---- the stream reader's driver side and data loss, without Spark ---------------------------


def test_stream_reader_offsets(broker: Any) -> None:
    """initialOffset/latestOffset/partitions as Spark's driver calls them, against the broker."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    bootstrap = broker.bootstrap
    create_topic(bootstrap, "drv", partitions=2)
    produce(bootstrap, "drv", plain_records(10, partitions=2))
    options = parse_options({"bootstrap.servers": bootstrap, "subscribe": "drv",
                             "startingOffsets": "earliest", "maxOffsetsPerTrigger": "4"},
                            "stream")
    reader = StreamsStreamReader(options)
    try:
        start = reader.initialOffset()
        assert start == {"drv": {"0": 0, "1": 0}} == reader.initialOffset()
        assert reader.getDefaultReadLimit() == ReadMaxRows(4)
        assert reader.latestOffset(start, ReadMaxRows(4)) == {"drv": {"0": 2, "1": 2}}
        end = reader.latestOffset(start, ReadAllAvailable())
        assert end == {"drv": {"0": 5, "1": 5}}
        assert reader.partitions(end, end) == []
        assert reader.latestOffset(end, ReadAllAvailable()) is end  # nothing new: start itself

        # availableNow: heads frozen at prepare time, later records wait for the next run.
        reader.prepareForTriggerAvailableNow()
        produce(bootstrap, "drv", plain_records(4, partitions=2))
        assert reader.latestOffset(end, ReadAllAvailable()) is end
        assert reader.reportLatestOffset() == end

        # A partition added later is read from offset 0.
        fresh = StreamsStreamReader(options)
        try:
            admin_call(bootstrap, "create_partitions", {"drv": NewPartitions(3)})
            produce(bootstrap, "drv", [{"value": b"p2", "partition": 2}])
            latest = fresh.latestOffset(end, ReadAllAvailable())
            assert latest == {"drv": {"0": 7, "1": 7, "2": 1}}
            planned = fresh.partitions(end, latest)
            assert [(p.value.partition, p.value.start, p.value.end) for p in planned] == \
                [(0, 5, 7), (1, 5, 7), (2, 0, 1)]
            batches = list(fresh.read(planned[2]))
            assert [b.to_pylist()[0]["value"] for b in batches] == [b"p2"]
        finally:
            fresh.stop()
    finally:
        reader.stop()
    reader.stop()  # idempotent


def test_data_loss_fails_or_skips(broker: Any) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "lossy", partitions=1)
    produce(bootstrap, "lossy", plain_records(10, partitions=1))
    admin_call(bootstrap, "delete_records", {TopicPartition("lossy", 0): RecordsToDelete(6)})
    settings = parse_options({"bootstrap.servers": bootstrap, "subscribe": "lossy"},
                             "batch").client

    with pytest.raises(DataLossError, match="offsets 2 to 5 of lossy-0 .* failOnDataLoss"):
        list(read_range(Range("lossy", 0, 2, 10, settings, fail_on_data_loss=True)))
    batches = list(read_range(Range("lossy", 0, 2, 10, settings, fail_on_data_loss=False)))
    assert [row["offset"] for b in batches for row in b.to_pylist()] == [6, 7, 8, 9]

    # The stream reader: an end offset behind the start is data loss too.
    stream = StreamsStreamReader(parse_options(
        {"bootstrap.servers": bootstrap, "subscribe": "lossy"}, "stream"))
    with pytest.raises(DataLossError, match="went back from 12 to 10"):
        stream.partitions({"lossy": {"0": 12}}, {"lossy": {"0": 10}})
    lenient = StreamsStreamReader(parse_options(
        {"bootstrap.servers": bootstrap, "subscribe": "lossy", "failOnDataLoss": "false"},
        "stream"))
    assert lenient.partitions({"lossy": {"0": 12}}, {"lossy": {"0": 10}}) == []


@pytest.mark.spark
def test_data_loss_through_spark(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "gone", partitions=1)
    produce(broker.bootstrap, "gone", plain_records(10, partitions=1))
    admin_call(broker.bootstrap, "delete_records", {TopicPartition("gone", 0): RecordsToDelete(4)})
    from_zero = json.dumps({"gone": {"0": 0}})
    with pytest.raises(Exception, match="failOnDataLoss"):
        reader(spark, broker.bootstrap, "gone", startingOffsets=from_zero).count()
    lenient = reader(spark, broker.bootstrap, "gone", startingOffsets=from_zero,
                     failOnDataLoss="false")
    assert positions(lenient) == [(0, o) for o in range(4, 10)]


# ---- discovery ------------------------------------------------------------------------------


def test_format_is_discovered_without_registration(tmp_path: Path) -> None:
    """What PySpark's lookup worker does, in a fresh interpreter outside the repository."""
    script = (
        "import importlib, pkgutil\n"
        "from pyspark.sql.datasource import DataSource\n"
        "found = {}\n"
        "for info in pkgutil.iter_modules():\n"
        "    if info.name.startswith('pyspark_'):\n"
        "        mod = importlib.import_module(info.name)\n"
        "        source = getattr(mod, 'DefaultSource', None)\n"
        "        if source is not None and issubclass(source, DataSource):\n"
        "            found[source.name()] = source.__module__\n"
        "print(found.get('streams'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "streams.spark.source"
    # The fixture session must not have registered the format itself.
    conftest = (Path(__file__).parent / "conftest.py").read_text()
    assert "dataSource.register" not in conftest


# ---- option and offset rules (no Spark) -----------------------------------------------------


def test_cap_offsets_shares_the_limit_by_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 100}
    end = {("t", 0): 90, ("t", 1): 110, ("t", 2): 5}  # backlogs 90, 10, 5 (partition 2 is new)
    capped = cap_offsets(start, end, 21)
    assert sum(capped[tp] - start.get(tp, 0) for tp in capped) == 21
    assert capped == {("t", 0): 18, ("t", 1): 102, ("t", 2): 1}
    assert cap_offsets(start, end, 1000) == end
    # A partition behind its start (data loss) is left as it is.
    assert cap_offsets({("t", 0): 50}, {("t", 0): 10}, 5) == {("t", 0): 10}


def test_option_rules() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "a, b,a"}
    batch = parse_options(base, "batch")
    assert batch.subscription.topics == ("a", "b")
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    assert batch.client.isolation_level == "read_committed" and batch.fail_on_data_loss
    assert parse_options(base, "stream").starting == "latest"
    with pytest.raises(SourceOptionError, match="only valid for batch"):
        parse_options({**base, "endingOffsets": "latest"}, "stream")
    with pytest.raises(SourceOptionError, match="exactly one of"):
        parse_options({**base, "subscribePattern": "x.*"}, "batch")
    with pytest.raises(SourceOptionError, match="'maxOffsetsPerTrigger' must be a positive"):
        parse_options({**base, "maxOffsetsPerTrigger": "0"}, "stream")
    with pytest.raises(SourceOptionError, match="'failOnDataLoss' must be 'true' or 'false'"):
        parse_options({**base, "failOnDataLoss": "maybe"}, "stream")
    with pytest.raises(SourceOptionError, match="not supported by the streams source"):
        parse_options({**base, "startingTimestamp": "1"}, "batch")
    with pytest.raises(SourceOptionError, match="'endingOffsets' must be 'latest' or JSON"):
        parse_options({**base, "endingOffsets": "earliest"}, "batch")

    # kafka.<consumer key>: the reader's keys from streams/kafka's one client table, onto the
    # settings it reads with; a consumer key the reader does not honour is refused by name.
    tuned = parse_options({**base, "kafka.client.id": "me", "kafka.fetch.max.bytes": "4096",
                           "kafka.max.partition.fetch.bytes": "512",
                           "kafka.request.timeout.ms": "5000",
                           "kafka.isolation.level": "read_uncommitted"}, "batch").client
    assert tuned.client_kwargs() == {
        "client_id": "me", "request_timeout_ms": 5000, "max_partition_fetch_bytes": 512,
        "fetch_max_bytes": 4096, "isolation_level": "read_uncommitted"}
    for honoured_elsewhere in ("kafka.fetch.min.bytes", "kafka.max.poll.records",
                               "kafka.auto.offset.reset"):
        with pytest.raises(SourceOptionError, match=f"unknown option '{honoured_elsewhere}'"):
            parse_options({**base, honoured_elsewhere: "1"}, "batch")
    with pytest.raises(SourceOptionError, match="'kafka.fetch.max.bytes' must be a positive"):
        parse_options({**base, "kafka.fetch.max.bytes": "0"}, "batch")

    spec = parse_options({**base, "startingOffsets": '{"a": {"0": 5, "1": -2, "2": -1}}'},
                         "batch").starting
    tps = [("a", 0), ("a", 1), ("a", 2)]
    earliest = dict.fromkeys(tps, 3)
    latest = dict.fromkeys(tps, 9)
    assert resolve_spec(spec, "startingOffsets", tps, earliest, latest) == \
        {("a", 0): 5, ("a", 1): 3, ("a", 2): 9}
    with pytest.raises(SourceOptionError, match=r"a-9 are not among the subscribed partitions"):
        resolve_spec({**spec, ("a", 9): 0}, "startingOffsets", tps, earliest, latest)
