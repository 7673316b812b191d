"""SparkSink writes exactly ``flush.size`` rows per flush, splitting a buffer at a row.

Kafka Connect's HDFS and S3 sinks commit a file per ``flush.size`` records; ours does the same,
whatever sizes the worker's fetches have, and the commit log records the split offsets so the
rest is neither lost nor written twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_spark_sink import record, start_task

from connect.api import ErrantRecordReporter
from connect.api import TopicPartition as TP
from connect.spark.commit_log import CommitLog

pytestmark = pytest.mark.spark


def entries(path: Path) -> list[tuple[int, dict[tuple[str, int], int]]]:
    """(rows, offsets) of each commit-log entry with rows, in commit order (not the entry
    fixing the schema)."""
    log = CommitLog(path)
    return [(e.rows, dict(e.offsets)) for e in log.refresh() if e.files]


def table_offsets(spark, path: Path) -> list[tuple[int, int]]:
    return sorted((r["_partition"], r["_offset"]) for r in spark.read.parquet(str(path)).collect())


def test_a_large_put_is_written_in_flushes_of_exactly_flush_size(spark, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, **{"flush.size": 5})
    task.open([TP("t", 0)])
    task.put([record(i, {"n": i}) for i in range(12)])  # the schema is inferred first
    task.flusher.wait()
    assert entries(tmp_path) == [(5, {("t", 0): 5}), (5, {("t", 0): 10})]
    assert task.pre_commit({TP("t", 0): 12}) == {TP("t", 0): 10}  # 10, 11 still buffered

    task.put([record(i, {"n": i}) for i in range(12, 15)])  # 5 buffered again: due
    task.flusher.wait()
    assert entries(tmp_path)[-1] == (5, {("t", 0): 15})
    task.put([record(15, {"n": 15})])
    task.stop()  # writes what is left, however little
    assert [rows for rows, _ in entries(tmp_path)] == [5, 5, 5, 1]
    assert table_offsets(spark, tmp_path) == [(0, i) for i in range(16)]


def test_a_flush_splits_the_last_partition_it_takes(spark, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, **{"flush.size": 5})
    task.open([TP("t", 0), TP("t", 1)])
    task.put([record(i, {"n": i}, partition=0) for i in range(3)]
             + [record(i, {"n": i}, partition=1) for i in range(4)])
    task.flusher.wait()
    assert entries(tmp_path) == [(5, {("t", 0): 3, ("t", 1): 2})]
    assert task.pre_commit({TP("t", 0): 3, TP("t", 1): 4}) == {TP("t", 0): 3, TP("t", 1): 2}
    task.stop()
    assert entries(tmp_path)[-1] == (2, {("t", 1): 4})
    assert table_offsets(spark, tmp_path) == [(0, 0), (0, 1), (0, 2),
                                              (1, 0), (1, 1), (1, 2), (1, 3)]

    again, context = start_task(tmp_path, **{"flush.size": 5})
    again.open([TP("t", 0), TP("t", 1)])
    assert context.rewinds == {TP("t", 0): 3, TP("t", 1): 4}
    again.stop()


def test_a_split_after_a_bad_record_covers_it_once(spark, tmp_path: Path) -> None:
    reported: list[int] = []
    reporter = ErrantRecordReporter(lambda rec, err: reported.append(rec.kafka_offset))
    task, _ = start_task(tmp_path, reporter, **{"flush.size": 3})
    task.open([TP("t", 0)])
    task.put([record(i, {"n": i}) for i in range(3)])  # schema fixed: n bigint
    task.put([record(i, {"n": "many" if i == 5 else i}) for i in range(3, 10)])
    task.flusher.wait()
    assert reported == [5]
    # Good rows 3, 4, 6 make a flush: it covers offsets up to 7, the bad record included.
    assert entries(tmp_path) == [(3, {("t", 0): 3}), (3, {("t", 0): 7}), (3, {("t", 0): 10})]
    task.stop()
    assert table_offsets(spark, tmp_path) == [(0, i) for i in range(10) if i != 5]


def test_without_an_offset_column_a_buffer_is_written_whole(spark, tmp_path: Path) -> None:
    """A metastore table created by the user without ``_offset``: the rows cannot be split by
    offset, so a flush takes whole buffers (more than flush.size rows)."""
    spark.sql("DROP TABLE IF EXISTS no_offsets")
    location = tmp_path / "no_offsets"
    spark.sql(f"CREATE TABLE no_offsets (n BIGINT) USING parquet LOCATION '{location}'")
    try:
        task, _ = start_task(location, **{"flush.size": 5, "table": "no_offsets"})
        task.open([TP("t", 0)])
        task.put([record(i, {"n": i}) for i in range(7)])
        task.stop()
        assert entries(location) == [(7, {("t", 0): 7})]
        assert sorted(r["n"] for r in spark.table("no_offsets").collect()) == list(range(7))
    finally:
        spark.sql("DROP TABLE IF EXISTS no_offsets")
