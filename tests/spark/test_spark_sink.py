"""SparkSink end to end: a standalone worker (in-process) writes topics into Parquet tables."""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parents[1] / "connect"))

from helpers import create_topics, wait_until  # noqa: E402
from worker_helpers import (  # noqa: E402
    ThreadedWorker,
    consume_all,
    http,
    produce,
    standalone,
    wait_running,
)

from connect.api import ConnectException, ErrantRecordReporter, SinkTaskContext  # noqa: E402
from connect.api import TopicPartition as TP  # noqa: E402
from connect.data import Decimal, SchemaBuilder, Struct, Timestamp  # noqa: E402
from connect.records import SinkRecord  # noqa: E402
from connect.spark.commit_log import CommitLog  # noqa: E402

pytestmark = pytest.mark.spark

JSON = "org.apache.kafka.connect.json.JsonConverter"


class Reading(BaseModel):
    """The table schema of the DLQ test (``value.schema.model=test_spark_sink:Reading``)."""

    sensor: str
    temp: float
    ok: bool = True


def committed_rows(path: Path) -> int:
    """Rows of commit-log entries whose files are in place (cheap to poll; no Spark)."""
    if not (path / "_streams_sink" / "commits").exists():
        return 0
    log = CommitLog(path)
    log.refresh()
    return log.rows - sum(e.rows for e in log.entries
                          if not all((path / f.final).exists() for f in e.files))


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    create_topics(bootstrap, {topic: partitions})


def produce_with_timestamps(bootstrap: str, topic: str, values: list[bytes],
                            timestamps: list[int]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for value, ts in zip(values, timestamps, strict=True):
                await producer.send(topic, value=value, timestamp_ms=ts)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


def create_sink(url: str, name: str, **config: Any) -> None:
    body = {"connector.class": "SparkSink", "tasks.max": "1", **config}
    code, answer = http("POST", url + "/connectors",
                        {"name": name, "config": {k: str(v) for k, v in body.items()}})
    assert code == 201, answer


def sink_offsets(url: str, name: str) -> dict[int, int]:
    code, body = http("GET", f"{url}/connectors/{name}/offsets")
    assert code == 200, body
    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"]
            for o in body["offsets"]}


@pytest.fixture
def worker(tmp_path: Path, broker) -> Iterator[ThreadedWorker]:
    instance = standalone(tmp_path, broker.bootstrap, **{
        "value.converter": JSON, "value.converter.schemas.enable": "false",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    try:
        yield instance
    finally:
        instance.stop()


def test_json_records_land_exactly_once_with_spark_types(spark, worker: ThreadedWorker,
                                                         broker, tmp_path: Path) -> None:
    n = 25_000
    create_topic(broker.bootstrap, "events", 3)

    def event(i: int) -> dict[str, Any]:
        return {"id": i, "price": i / 4, "name": f"n{i}", "even": i % 2 == 0,
                "nested": {"a": i * 3, "tags": [f"t{i % 5}"]},
                "maybe": None if i % 10 else i}

    produce(broker.bootstrap, "events", [json.dumps(event(i)).encode() for i in range(n)])
    path = tmp_path / "events"
    create_sink(worker.url, "events-sink", topics="events", path=path, **{
        "flush.size": 5000, "flush.interval.ms": 500, "tasks.max": 2})
    wait_running(worker.url, "events-sink", 2)
    wait_until(lambda: committed_rows(path) >= n, 120, interval=0.2, message=f"{n} rows")

    df = spark.read.parquet(str(path))
    types = dict(df.dtypes)
    assert types == {"id": "bigint", "price": "double", "name": "string", "even": "boolean",
                     "nested": "struct<a:bigint,tags:array<string>>", "maybe": "bigint",
                     "_topic": "string", "_partition": "int", "_offset": "bigint",
                     "_timestamp": "timestamp"}
    rows = df.collect()
    assert len(rows) == n
    assert sorted(r["id"] for r in rows) == list(range(n))
    by_partition: dict[int, list[int]] = {}
    for r in rows:
        by_partition.setdefault(r["_partition"], []).append(r["_offset"])
        expected = event(r["id"])
        assert (r["price"], r["name"], r["even"], r["maybe"], r["_topic"]) == (
            expected["price"], expected["name"], expected["even"], expected["maybe"], "events")
        assert r["nested"].asDict() == expected["nested"]
        assert isinstance(r["_timestamp"], dt.datetime)
    assert sorted(by_partition) == [0, 1, 2]
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # each offset exactly once
    # The group's offsets follow the commit log and cover everything.
    wait_until(lambda: sum(sink_offsets(worker.url, "events-sink").values()) == n, 30,
               message="offsets committed")
    assert sink_offsets(worker.url, "events-sink") == {p: len(o) for p, o in by_partition.items()}
    assert not list((path / "_streams_staging").iterdir())


def test_connect_schema_types_and_date_partitions(spark, tmp_path: Path, broker) -> None:
    from connect.converters.json import JsonConverter

    schema = (SchemaBuilder.struct().name("Order")
              .field("id", SchemaBuilder.int64().build())
              .field("qty", SchemaBuilder.int16().build())
              .field("small", SchemaBuilder.int8().build())
              .field("ratio", SchemaBuilder.float32().build())
              .field("amount", Decimal.builder(2).build())
              .field("placed", Timestamp.builder().build())
              .field("blob", SchemaBuilder.bytes().optional().build())
              .field("labels", SchemaBuilder.map(SchemaBuilder.string().build(),
                                                 SchemaBuilder.int32().build()).build())
              .build())
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    day = 86_400_000
    # Midnight UTC three days ago: recent enough for the topic's 7-day retention, whose first
    # pass comes 30 s after the broker starts (log.initial.task.delay.ms).
    now = int(time.time() * 1000)
    base = now - now % day - 3 * day
    n = 300
    values, stamps = [], []
    for i in range(n):
        struct = (Struct(schema).put("id", i).put("qty", i % 100).put("small", i % 7)
                  .put("ratio", 0.5).put("amount", decimal.Decimal(i).scaleb(-2))
                  .put("placed", dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
                       + dt.timedelta(seconds=i))
                  .put("blob", bytes([i % 256]) if i % 2 else None)
                  .put("labels", {"x": i}))
        values.append(converter.from_connect_data("orders", schema, struct))
        stamps.append(base + (i % 3) * day + i)  # three different days
    produce_with_timestamps(broker.bootstrap, "orders", values, stamps)

    instance = standalone(tmp_path, broker.bootstrap, **{
        "value.converter": JSON, "value.converter.schemas.enable": "true"})
    try:
        path = tmp_path / "orders"
        create_sink(instance.url, "orders-sink", topics="orders", path=path,
                    **{"partition.by": "_date", "flush.interval.ms": 200})
        wait_until(lambda: committed_rows(path) >= n, 90, interval=0.2, message="rows")
    finally:
        instance.stop()
    days = [dt.datetime.fromtimestamp((base + k * day) / 1000, dt.UTC).date() for k in range(3)]
    assert sorted(p.name for p in path.glob("_date=*")) == [f"_date={d}" for d in days]
    df = spark.read.parquet(str(path))
    types = dict(df.dtypes)
    assert {k: types[k] for k in ("id", "qty", "small", "ratio", "amount", "placed", "blob",
                                  "labels", "_date")} == {
        "id": "bigint", "qty": "smallint", "small": "tinyint", "ratio": "float",
        "amount": "decimal(38,2)", "placed": "timestamp", "blob": "binary",
        "labels": "map<string,int>", "_date": "date"}
    rows = sorted(df.collect(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == list(range(n))
    r7 = rows[7]
    assert r7["amount"] == decimal.Decimal("0.07") and r7["qty"] == 7 and r7["small"] == 0
    assert r7["placed"] == dt.datetime(2024, 5, 1, 0, 0, 7)  # session time zone is UTC
    assert r7["blob"] == b"\x07" and rows[8]["blob"] is None and r7["labels"] == {"x": 7}
    assert r7["_date"] == days[7 % 3]
    assert {r["_date"] for r in rows if r["id"] % 3 == 0} == {days[0]}


def test_table_mode_restart_continues_without_duplicates(spark, tmp_path: Path,
                                                         broker) -> None:
    create_topic(broker.bootstrap, "clicks", 2)
    settings = {"value.converter": JSON, "value.converter.schemas.enable": "false",
                "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    path = tmp_path / "clicks"
    config = {"topics": "clicks", "table": "clicks_tbl", "path": path, "include.key": "true",
              "flush.size": 700, "flush.interval.ms": 300}
    first = 3000
    produce(broker.bootstrap, "clicks", [json.dumps({"n": i}).encode() for i in range(first)],
            keys=[f"k{i % 13}".encode() for i in range(first)])
    instance = standalone(tmp_path, broker.bootstrap, **settings)
    try:
        create_sink(instance.url, "clicks-sink", **config)
        wait_until(lambda: committed_rows(path) >= first, 90, interval=0.2, message="first")
        wait_until(lambda: spark.catalog.tableExists("clicks_tbl")
                   and spark.table("clicks_tbl").count() == first, 30,
                   message="the table created and refreshed")
    finally:
        instance.stop()
    total = 5000
    produce(broker.bootstrap, "clicks",
            [json.dumps({"n": i}).encode() for i in range(first, total)],
            keys=[f"k{i % 13}".encode() for i in range(first, total)])
    # A new worker instance (its offset file is fresh too): the commit log decides.
    (tmp_path / "connect.offsets").unlink(missing_ok=True)
    instance = standalone(tmp_path, broker.bootstrap, **settings)
    try:
        create_sink(instance.url, "clicks-sink", **config)
        wait_until(lambda: committed_rows(path) >= total, 90, interval=0.2, message="second")
    finally:
        instance.stop()
    try:
        rows = spark.table("clicks_tbl").collect()
        assert len(rows) == total
        assert sorted(r["n"] for r in rows) == list(range(total))
        assert len({(r["_partition"], r["_offset"]) for r in rows}) == total
        assert all(r["_key"] == f"k{r['n'] % 13}" for r in rows)
        assert spark.read.parquet(str(path)).count() == total
        location = [r[1] for r in spark.sql("DESCRIBE TABLE EXTENDED clicks_tbl").collect()
                    if r[0] == "Location"]
        assert location and location[0].rstrip("/").endswith(str(path))
    finally:
        spark.sql("DROP TABLE IF EXISTS clicks_tbl")


def test_records_failing_the_model_go_to_the_dead_letter_queue(spark, worker: ThreadedWorker,
                                                               broker, tmp_path: Path) -> None:
    values = [json.dumps({"sensor": f"s{i}", "temp": 20 + i / 10}).encode() for i in range(50)]
    values[10] = json.dumps({"sensor": "s10", "temp": "hot"}).encode()
    values[31] = json.dumps({"temp": 1.5}).encode()  # no sensor
    create_topic(broker.bootstrap, "readings", 1)
    produce(broker.bootstrap, "readings", values)
    path = tmp_path / "readings"
    create_sink(worker.url, "readings-sink", topics="readings", path=path, **{
        "value.schema.model": "test_spark_sink:Reading", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "readings-dlq",
        "errors.deadletterqueue.topic.replication.factor": 1,
        "errors.deadletterqueue.context.headers.enable": "true",
        "flush.interval.ms": 200})
    wait_until(lambda: committed_rows(path) >= 48, 60, interval=0.2, message="good rows")
    dead = consume_all(broker.bootstrap, "readings-dlq", 2)
    assert sorted(r.value for r in dead) == sorted([values[10], values[31]])
    headers = dict(dead[0].headers)
    assert headers["__connect.errors.stage"] == b"TASK_PUT"
    assert b"does not match Reading" in headers["__connect.errors.exception.message"]
    df = spark.read.parquet(str(path))
    assert dict(df.dtypes)["temp"] == "double" and dict(df.dtypes)["ok"] == "boolean"
    rows = df.collect()
    assert sorted(r["_offset"] for r in rows) == [i for i in range(50) if i not in (10, 31)]
    assert all(r["ok"] is True for r in rows)
    wait_until(lambda: sink_offsets(worker.url, "readings-sink") == {0: 50}, 30,
               message="offsets cover the dead-lettered records")


def test_config_validation_over_rest(worker: ThreadedWorker) -> None:
    code, result = http("PUT", worker.url + "/connector-plugins/SparkSink/config/validate",
                        {"connector.class": "SparkSink", "name": "v", "topics": "t",
                         "flush.size": "0"})
    assert code == 200
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert result["name"] == "connect.spark.SparkSinkConnector"
    assert any('"path"' in e and '"table"' in e for e in errors["path"])
    assert errors["table"] == errors["path"]
    assert any("at least 1" in e for e in errors["flush.size"])
    assert result["error_count"] == 3
    code, result = http("PUT", worker.url + "/connector-plugins/SparkSink/config/validate", {
        "connector.class": "SparkSink", "name": "v", "topics": "t", "table": "bad name!",
        "value.schema.model": "nowhere:Model", "partition.by": "a/b"})
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert errors["path"] == [] and "table name" in errors["table"][0]
    assert "nowhere" in errors["value.schema.model"][0] and "'/'" in errors["partition.by"][0]
    code, answer = http("POST", worker.url + "/connectors", {"name": "nope", "config": {
        "connector.class": "SparkSink", "topics": "t"}})
    assert code == 400 and "needs a destination" in answer["message"]


# -- the task on its own (no broker) ------------------------------------------------------------
def record(offset: int, value: Any, partition: int = 0, key: Any = None,
           schema: Any = None) -> SinkRecord:
    return SinkRecord("t", partition, None, key, schema, value, offset, 1_700_000_000_000 + offset)


def start_task(path: Path, reporter: ErrantRecordReporter | None = None,
               **config: Any) -> tuple[Any, SinkTaskContext]:
    from connect.spark import SparkSinkTask

    task = SparkSinkTask()
    context = SinkTaskContext({}, reporter)
    task.initialize(context)
    task.start({"name": "unit", "path": str(path), "flush.interval.ms": "60000",
                **{k: str(v) for k, v in config.items()}})
    return task, context


def test_task_offsets_follow_the_commit_log(spark, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path)
    task.open([TP("t", 0), TP("t", 1)])
    task.put([record(i, {"n": i}) for i in range(5)])
    # Nothing is written yet: pre_commit must not confirm what the worker consumed.
    assert task.pre_commit({TP("t", 0): 5}) == {}
    task.flush({})
    assert task.pre_commit({TP("t", 0): 5, TP("t", 1): 0}) == {TP("t", 0): 5}
    task.put([record(i, {"n": i}) for i in range(3, 8)])  # 3, 4 redelivered: dropped
    task.close([TP("t", 0)])  # flushes what t-0 buffered
    task.stop()
    again, context = start_task(tmp_path)
    again.open([TP("t", 0), TP("t", 1)])
    assert context.rewinds == {TP("t", 0): 8}  # t-1 has nothing committed: no rewind
    again.put([record(i, {"n": i}) for i in range(0, 10)] + [record(0, {"n": 100}, 1)])
    again.stop()
    rows = spark.read.parquet(str(tmp_path)).collect()
    assert sorted((r["_partition"], r["_offset"], r["n"]) for r in rows) == \
        [(0, i, i) for i in range(10)] + [(1, 0, 100)]
    with pytest.raises(ConnectException, match="partition.by=_partition differs"):
        start_task(tmp_path, **{"partition.by": "_partition"})  # the layout is fixed


def test_task_zombie_writer_never_duplicates(spark, tmp_path: Path) -> None:
    zombie, _ = start_task(tmp_path)  # e.g. a task whose partition was reassigned
    current, _ = start_task(tmp_path)
    zombie.put([record(i, {"n": i}) for i in range(10)])
    current.put([record(i, {"n": i}) for i in range(15)])
    current.flush({})
    zombie.flush({})  # its rows are all committed already: nothing is written
    zombie.put([record(i, {"n": i}) for i in range(12, 20)])  # 12..14 below the log: dropped
    zombie.stop()
    current.stop()
    offsets = [r["_offset"] for r in spark.read.parquet(str(tmp_path)).collect()]
    assert sorted(offsets) == list(range(20))


def test_task_flush_interval_asks_the_worker_for_a_commit(spark, tmp_path: Path) -> None:
    task, context = start_task(tmp_path, **{"flush.interval.ms": 400})
    task.put([record(0, {"n": 0})])
    assert task.pre_commit({TP("t", 0): 1}) == {}  # not due yet
    wait_until(lambda: context.commit_requested, 10, message="the flush timer")
    assert task.pre_commit({TP("t", 0): 1}) == {}  # due now: handed to the flush thread
    task.flusher.wait()
    assert task.pre_commit({TP("t", 0): 1}) == {TP("t", 0): 1}  # written and committed
    task.stop()
    assert spark.read.parquet(str(tmp_path)).count() == 1


def test_task_schema_rules_and_bad_records(spark, tmp_path: Path) -> None:
    reported: list[tuple[int, str]] = []
    reporter = ErrantRecordReporter(
        lambda rec, err: reported.append((rec.kafka_offset, str(err))))
    task, _ = start_task(tmp_path, reporter, **{"include.key": "true"})
    task.open([TP("t", 0)])
    task.put([record(0, {"a": 1, "b": "x"}, key=b"\x01"),
              record(1, {"a": 2.5, "c": [1, 2]}, key=b"\x02"),
              record(2, None)])
    task.flush({})  # schema fixed: a double, b string, c array<bigint>, _key binary
    task.put([record(3, {"a": "many", "b": 7}), record(4, {"a": 4, "zzz": 1, "b": {"q": 1}})])
    task.stop()
    assert reported == [(3, reported[0][1])]
    assert "column 'a': cannot store 'many' as double" in reported[0][1]
    df = spark.read.parquet(str(tmp_path))
    assert dict(df.dtypes)["a"] == "double" and dict(df.dtypes)["_key"] == "binary"
    rows = {r["_offset"]: r for r in df.collect()}
    assert sorted(rows) == [0, 1, 2, 4]
    assert rows[1]["c"] == [1, 2] and rows[1]["b"] is None and rows[0]["_key"] == b"\x01"
    assert rows[2]["a"] is None and rows[4]["b"] == '{"q":1}' and "zzz" not in df.columns

    plain, _ = start_task(tmp_path / "plain")  # no reporter: a bad record fails the task
    plain.put([record(0, 7), record(1, 8)])  # not a dict: a single column "value"
    plain.flush({})
    with pytest.raises(ConnectException, match=r"t-0@3: column 'value'.*errors.tolerance=all"):
        plain.put([record(2, 9), record(3, "text")])
    plain.stop()
    assert sorted(r["value"] for r in spark.read.parquet(str(tmp_path / "plain")).collect()) \
        == [7, 8]


def test_connect_struct_values_with_decimal(spark, tmp_path: Path) -> None:
    schema = (SchemaBuilder.struct().field("d", Decimal.builder(3).build())
              .field("inner", SchemaBuilder.struct().field("x", SchemaBuilder.int32().build())
                     .build()).build())
    inner = Struct(schema.field("inner").schema).put("x", 5)
    value = Struct(schema).put("d", decimal.Decimal("1.250")).put("inner", inner)
    task, _ = start_task(tmp_path)
    task.put([record(0, value, schema=schema)])
    task.stop()
    row = spark.read.parquet(str(tmp_path)).collect()[0]
    assert row["d"] == decimal.Decimal("1.250") and row["inner"]["x"] == 5


def test_table_location_defaults_to_the_warehouse(tmp_path: Path) -> None:
    from connect.spark import SparkSinkTask

    class FakeSpark:  # only what location resolution touches
        class catalog:  # noqa: N801
            @staticmethod
            def tableExists(name: str) -> bool:  # noqa: N802
                return False

        class conf:  # noqa: N801
            @staticmethod
            def get(key: str) -> str:
                assert key == "spark.sql.warehouse.dir"
                return f"file:{tmp_path}/wh"

    task = SparkSinkTask()
    task.spark = FakeSpark()
    for name, expected in [("events", "wh/events"), ("default.events", "wh/events"),
                           ("sales.events", "wh/sales.db/events")]:
        task.table_name = name
        assert task._table_location() == tmp_path / expected
