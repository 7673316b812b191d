"""SparkSink with ByteArrayConverter values: JSON texts parsed by the sink in bulk (Arrow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_spark_sink import (
    committed_rows,
    consume_all,
    create_sink,
    create_topic,
    produce,
    record,
    sink_offsets,
    standalone,
    start_task,
    wait_until,
)

from connect.api import ErrantRecordReporter
from connect.api import TopicPartition as TP
from connect.spark import schema as sch

pytestmark = pytest.mark.spark

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def event(i: int) -> dict[str, Any]:
    row: dict[str, Any] = {"id": i, "name": f"n{i}", "even": i % 2 == 0,
                           "price": i if i % 3 else i / 4,  # ints and floats: double
                           "nested": {"a": i * 3, "tags": [f"t{i % 5}"]},
                           "maybe": None if i % 10 else i}
    if i % 7 == 0:
        del row["name"]  # missing: null
    return row


def spy_bulk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row counts of the batches Arrow parsed in bulk (None results not counted)."""
    parsed: list[int] = []
    real = sch.read_json_objects

    def spy(values: list[bytes], schema: Any) -> Any:
        result = real(values, schema)
        if result is not None:
            parsed.append(len(values))
        return result

    monkeypatch.setattr(sch, "read_json_objects", spy)
    return parsed


def rows_of(spark: Any, path: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    df = spark.read.parquet(str(path))
    rows = sorted((r.asDict(recursive=True) for r in df.collect()),
                  key=lambda r: (r["_partition"], r["_offset"]))
    return dict(df.dtypes), rows


def test_bytes_values_match_the_decoded_path(spark, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    parsed = spy_bulk(monkeypatch)
    n = 3000
    texts = [json.dumps(event(i)).encode() for i in range(n)]
    texts[2500] = json.dumps({**event(2500), "surprise": 1, "_topic": "x"}).encode()  # dropped

    def run(path: Path, values: list[Any], **config: Any) -> None:
        task, _ = start_task(path, **{"include.key": "true"}, **config)
        task.open([TP("t", 0), TP("t", 1)])
        for start in range(0, n, 1000):  # first flush infers the schema, the rest is fixed
            task.put([record(i, values[i], partition=i % 2, key=f"k{i % 13}")
                      for i in range(start, start + 1000)])
            task.flush({})
        task.stop()

    run(tmp_path / "bytes", texts, **{"value.converter": BYTES, "value.format": "json"})
    assert sum(parsed) == n  # every batch went through Arrow's JSON reader
    assert "fields ['_topic', 'surprise'] are not columns of the table" in caplog.text
    run(tmp_path / "decoded", [json.loads(t) for t in texts])
    bytes_types, bytes_rows = rows_of(spark, tmp_path / "bytes")
    decoded_types, decoded_rows = rows_of(spark, tmp_path / "decoded")
    assert bytes_types == decoded_types == {
        "id": "bigint", "name": "string", "even": "boolean", "price": "double",
        "nested": "struct<a:bigint,tags:array<string>>", "maybe": "bigint", "_key": "string",
        "_topic": "string", "_partition": "int", "_offset": "bigint", "_timestamp": "timestamp"}
    assert len(bytes_rows) == n
    assert bytes_rows == decoded_rows
    by_id = {r["id"]: r for r in bytes_rows}
    assert by_id[7]["name"] is None and by_id[8]["price"] == 8.0 and by_id[9]["price"] == 2.25
    assert by_id[2500]["_topic"] == "t"


def test_bad_values_fall_back_to_the_reporter(spark, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = spy_bulk(monkeypatch)
    reported: list[tuple[int, str]] = []
    reporter = ErrantRecordReporter(
        lambda rec, err: reported.append((rec.kafka_offset, str(err))))
    task, _ = start_task(tmp_path, reporter, **{"value.converter": BYTES, "value.format": "json"})
    task.open([TP("t", 0)])
    task.put([record(i, json.dumps({"n": i, "s": "x"}).encode()) for i in range(10)])
    task.flush({})  # schema fixed: n bigint, s string
    batch = [json.dumps({"n": i, "s": "x"}).encode() for i in range(10, 20)]
    batch[2] = b'{"n": 12, "s": '  # malformed
    batch[4] = b'{"n": 14.5}'  # not a bigint
    batch[6] = b'"just a string"'  # not an object: a 'value' column the table lacks
    batch[8] = None  # a tombstone: a row of nulls, as with JsonConverter
    task.put([record(10 + i, v) for i, v in enumerate(batch)])
    task.put([record(i, b'{"n": %d,\n "s": "y"}' % i) for i in range(20, 22)])  # multi-line
    task.put([record(i, json.dumps({"n": i}).encode()) for i in range(22, 25)])
    task.stop()
    assert parsed == [10, 3]  # the first batch (after inference) and the last one
    assert [offset for offset, _ in reported] == [12, 14]
    assert "value is not JSON" in reported[0][1]
    assert "column 'n': cannot store 14.5 as bigint" in reported[1][1]
    rows = {r["_offset"]: r for r in spark.read.parquet(str(tmp_path)).collect()}
    assert sorted(rows) == [i for i in range(25) if i not in (12, 14)]
    assert rows[16]["n"] is None and rows[18]["n"] is None and rows[21]["s"] == "y"
    assert rows[24]["n"] == 24 and rows[24]["s"] is None


def test_byte_values_stay_bytes_unless_value_format_is_json(spark, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, **{"value.converter": BYTES})  # value.format=auto
    task.put([record(0, b'{"n": 1}'), record(1, b"\xffnot json")])
    task.stop()
    rows = sorted(spark.read.parquet(str(tmp_path)).collect(), key=lambda r: r["_offset"])
    assert [r["value"] for r in rows] == [b'{"n": 1}', b"\xffnot json"]


def test_binary_value_table_keeps_bytes(spark, tmp_path: Path) -> None:
    """A table written before (one binary 'value' column) keeps storing the raw bytes."""
    plain, _ = start_task(tmp_path)
    plain.put([record(0, b"\x00raw", schema=None)])
    plain.stop()
    task, _ = start_task(tmp_path, **{"value.converter": BYTES, "value.format": "json"})
    task.put([record(1, b'{"n": 1}'), record(2, b"\xffnot json")])
    task.stop()
    rows = sorted(spark.read.parquet(str(tmp_path)).collect(), key=lambda r: r["_offset"])
    assert [r["value"] for r in rows] == [b"\x00raw", b'{"n": 1}', b"\xffnot json"]


def test_malformed_record_goes_to_the_dead_letter_queue(spark, tmp_path: Path,
                                                        broker) -> None:
    n = 2000
    values = [json.dumps(event(i)).encode() for i in range(n)]
    values[1234] = b'{"id": 1234, "name": '
    create_topic(broker.bootstrap, "raw", 1)
    produce(broker.bootstrap, "raw", values)
    path = tmp_path / "raw"
    instance = standalone(tmp_path, broker.bootstrap, **{
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"})
    try:
        create_sink(instance.url, "raw-sink", topics="raw", path=path, **{
            "value.converter": BYTES, "value.format": "json", "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "raw-dlq",
            "errors.deadletterqueue.topic.replication.factor": 1,
            "flush.size": 500, "flush.interval.ms": 200})
        wait_until(lambda: committed_rows(path) >= n - 1, 90, interval=0.2, message="rows")
        dead = consume_all(broker.bootstrap, "raw-dlq", 1)
        assert [r.value for r in dead] == [values[1234]]
        wait_until(lambda: sink_offsets(instance.url, "raw-sink") == {0: n}, 30,
                   message="offsets cover the dead-lettered record")
    finally:
        instance.stop()
    df = spark.read.parquet(str(path))
    assert dict(df.dtypes)["price"] == "double" and dict(df.dtypes)["nested"] == \
        "struct<a:bigint,tags:array<string>>"
    rows = df.collect()
    assert len(rows) == n - 1
    assert sorted(r["_offset"] for r in rows) == [i for i in range(n) if i != 1234]
    assert all(r["id"] == r["_offset"] for r in rows)


def test_bulk_parse_names_unknown_top_level_fields() -> None:
    import pyarrow as pa

    schema = pa.schema([("a", pa.struct([("x", pa.int64())])), ("b", pa.int64())])
    plain = [b'{"b":1,"a":{"x":1}}', b'{"a":{"x":2},"b":2}']
    columns, unknown = sch.read_json_objects(plain, schema)
    assert columns["b"].to_pylist() == [1, 2] and unknown == []
    extra = [b'{"b":1,"a":{"x":1},"z":"q"}', b'{"a":{"x":2},"b":2,"w":[1]}']
    columns, unknown = sch.read_json_objects(extra, schema)
    assert list(columns) == ["a", "b"] and unknown == ["z", "w"]
    mixed = [b'{"b":1,"a":{"x":1},"z":"q"}', b'{"a":{"x":2},"b":2,"z":7}']
    nested = [b'{"b":1,"a":{"x":1,"y":2}}']
    for values in (mixed, nested):  # parsed without naming them: still the same columns
        columns, unknown = sch.read_json_objects(values, schema)
        assert columns["a"].to_pylist()[0] == {"x": 1} and unknown == []
    assert sch.read_json_objects([b'{"b":"not a number","a":null}'], schema) is None
