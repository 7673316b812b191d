"""Avro with the schema registry -> SparkSink: a standalone worker with Confluent's
AvroConverter writes typed Spark columns from the registry schema (decimal, date,
timestamp-millis, timestamp-micros), and widens the table when the schema evolves compatibly;
``from_registry`` decodes the streams source's values."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "connect"))

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from helpers import wait_until  # noqa: E402
from test_spark_sink import committed_rows, create_sink, create_topic  # noqa: E402
from worker_helpers import produce, standalone  # noqa: E402

from connect.spark.commit_log import CommitLog  # noqa: E402
from streams.registry import SchemaRegistry  # noqa: E402

pytestmark = pytest.mark.spark

TRADE = {"type": "record", "name": "Trade", "namespace": "market", "fields": [
    {"name": "id", "type": "long"},
    {"name": "symbol", "type": "string"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12,
                               "scale": 4}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "venue", "type": ["null", "string"], "default": None},
]}
BASE = dt.datetime(2026, 5, 1, 9, 30, tzinfo=dt.UTC)


def trade(i: int) -> dict:
    return {"id": i, "symbol": f"S{i % 3}", "price": decimal.Decimal(i).scaleb(-4) + 10,
            "day": (BASE + dt.timedelta(days=i % 2)).date(),
            "at": BASE + dt.timedelta(milliseconds=i),
            "at_us": BASE + dt.timedelta(microseconds=i), "venue": None if i % 2 else "X"}


def test_avro_to_spark_sink_with_typed_columns(spark, tmp_path: Path, broker) -> None:
    create_topic(broker.bootstrap, "trades", 1)
    with SchemaRegistry(broker.bootstrap, port=0) as registry:
        ser = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(TRADE))
        n = 50
        produce(broker.bootstrap, "trades", [
            ser(trade(i), SerializationContext("trades", MessageField.VALUE)) for i in range(n)])
        worker = standalone(tmp_path, broker.bootstrap, **{
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry.url,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
        try:
            path = tmp_path / "trades"
            create_sink(worker.url, "trades-sink", topics="trades", path=path,
                        **{"flush.interval.ms": 200})
            wait_until(lambda: committed_rows(path) >= n, 90, interval=0.2, message="rows")
            # A compatible evolution (v2 adds fields with defaults) widens the table.
            v2 = {**TRADE, "fields": [*TRADE["fields"],
                                      {"name": "fee", "type": "double", "default": 0.0},
                                      {"name": "settled", "type": ["null", {
                                          "type": "int", "logicalType": "date"}],
                                       "default": None}]}
            ser2 = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(v2))
            produce(broker.bootstrap, "trades", [
                ser2({**trade(i), "fee": 0.25, "settled": dt.date(2026, 6, 1)},
                     SerializationContext("trades", MessageField.VALUE))
                for i in range(n, n + 10)])
            wait_until(lambda: committed_rows(path) >= n + 10, 90, interval=0.2,
                       message="v2 rows")
        finally:
            worker.stop()
    df = spark.read.option("mergeSchema", "true").parquet(str(path))
    types = dict(df.dtypes)
    assert {k: types[k] for k in ("id", "symbol", "price", "day", "at", "at_us", "venue", "fee",
                                  "settled")} == {
        "id": "bigint", "symbol": "string", "price": "decimal(12,4)", "day": "date",
        "at": "timestamp", "at_us": "timestamp", "venue": "string", "fee": "double",
        "settled": "date"}
    rows = sorted(df.collect(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == list(range(n + 10))
    assert {(r["fee"], r["settled"]) for r in rows[:n]} == {(None, None)}  # written before
    assert {(r["fee"], r["settled"]) for r in rows[n:]} == {(0.25, dt.date(2026, 6, 1))}
    log = CommitLog(path)
    log.refresh()
    assert {"fee", "settled"} <= {f["name"] for f in log.schema["fields"]}
    r7 = rows[7]
    assert r7["price"] == decimal.Decimal("10.0007") and r7["day"] == dt.date(2026, 5, 2)
    assert r7["at"] == dt.datetime(2026, 5, 1, 9, 30, 0, 7000)  # session time zone is UTC
    assert r7["at_us"] == dt.datetime(2026, 5, 1, 9, 30, 0, 7)  # microseconds kept
    assert r7["venue"] is None and rows[8]["venue"] == "X"


def test_streams_source_decodes_through_the_registry(spark, broker) -> None:
    """``from_registry`` on the ``streams`` source's value column: writer v1 and v2 records
    read as one typed struct column (the reader schema's defaults fill v1's missing field)."""
    from connect.spark.registry import from_registry

    v2 = {**TRADE, "fields": [*TRADE["fields"],
                              {"name": "fee", "type": "double", "default": 0.5}]}
    create_topic(broker.bootstrap, "trades-src", 1)
    with SchemaRegistry(broker.bootstrap, port=0) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        ctx = SerializationContext("trades-src", MessageField.VALUE)
        old = AvroSerializer(client, json.dumps(TRADE))
        new = AvroSerializer(client, json.dumps(v2))
        produce(broker.bootstrap, "trades-src",
                [old(trade(i), ctx) for i in range(3)]
                + [new({**trade(i), "fee": 1.25}, ctx) for i in range(3, 5)])
        df = (spark.read.format("streams").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "trades-src").load())
        decoded = df.select(from_registry("value", registry.url, subject="trades-src-value")
                            .alias("t")).select("t.*")
        types = dict(decoded.dtypes)
        rows = sorted(decoded.collect(), key=lambda r: r["id"])
    assert {k: types[k] for k in ("price", "day", "at_us", "fee")} == {
        "price": "decimal(12,4)", "day": "date", "at_us": "timestamp", "fee": "double"}
    assert [r["fee"] for r in rows] == [0.5, 0.5, 0.5, 1.25, 1.25]
    assert rows[4]["price"] == decimal.Decimal("10.0004")
    assert rows[1]["at_us"] == dt.datetime(2026, 5, 1, 9, 30, 0, 1)


def test_commit_log_widening_rules(tmp_path: Path) -> None:
    """Only an entry marked ``widen`` changes the fixed schema, and only by adding columns;
    rows written with the narrower schema still commit afterwards; checkpoints carry it."""
    from connect.spark.commit_log import CommitConflict, CommitEntry, widens

    def schema(*names: str) -> dict:
        return {"type": "struct", "fields": [
            {"name": n, "type": "long", "nullable": True, "metadata": {}} for n in names]}

    def entry(s: dict, rows: int = 0, widen: bool = False, start: int = 0) -> CommitEntry:
        offsets = {("t", 0): start + rows} if rows else {}
        return CommitEntry(f"w-{start}-{widen}", "c", 0, (), rows, offsets,
                           {("t", 0): start} if rows else {}, s, (), widen=widen)

    assert widens(schema("a"), schema("a", "b")) and not widens(schema("a", "b"), schema("a"))
    assert not widens(schema("a"), schema("b", "c"))
    log = CommitLog(tmp_path, compact_every=4)
    log.commit(entry(schema("a")))
    with pytest.raises(CommitConflict):  # an inferred wider schema is no widening
        log.commit(entry(schema("a", "b")))
    log.commit(entry(schema("a", "b"), widen=True))
    assert log.schema == schema("a", "b")
    log.commit(entry(schema("a"), rows=2))  # rows of a writer that had not seen it yet
    with pytest.raises(CommitConflict):  # a widening must keep every column
        log.commit(entry(schema("b", "c"), widen=True))
    log.commit(entry(schema("a", "b"), rows=1, start=2))  # entry 4: checkpointed
    again = CommitLog(tmp_path)
    again.refresh()
    assert again.schema == schema("a", "b") and again.offsets == {("t", 0): 3}


def test_widening_a_metastore_table(spark, tmp_path: Path) -> None:
    """Table mode: a widening adds the columns to the metastore table (ALTER TABLE ADD
    COLUMNS), so spark.table() shows them, null for the rows written before."""
    from test_spark_sink import record, start_task

    from connect.api import TopicPartition as TP
    from connect.data import Schema, SchemaBuilder, Struct

    v1 = SchemaBuilder.struct().name("T").field("n", Schema.INT64_SCHEMA).build()
    v2 = (SchemaBuilder.struct().name("T").field("n", Schema.INT64_SCHEMA)
          .field("tag", Schema.OPTIONAL_STRING_SCHEMA).build())
    task, _ = start_task(tmp_path / "tbl", table="widen_tbl")
    try:
        task.open([TP("t", 0)])
        task.put([record(i, Struct(v1).put("n", i), schema=v1) for i in range(3)])
        task.flush({})
        task.put([record(i, Struct(v2).put("n", i).put("tag", f"t{i}"), schema=v2)
                  for i in range(3, 5)])
        task.flush({})
        task.stop()
        rows = sorted(spark.table("widen_tbl").collect(), key=lambda r: r["n"])
        assert [(r["n"], r["tag"]) for r in rows] == [
            (0, None), (1, None), (2, None), (3, "t3"), (4, "t4")]
        assert dict(spark.table("widen_tbl").dtypes)["tag"] == "string"
    finally:
        spark.sql("DROP TABLE IF EXISTS widen_tbl")
