"""SparkSink fixes an inferred table schema in the commit log before it writes any rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_spark_sink import record, start_task

from connect.api import TopicPartition as TP
from connect.spark.commit_log import CommitLog

pytestmark = pytest.mark.spark


def test_the_inferred_schema_is_an_entry_of_its_own(spark, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path)
    task.open([TP("t", 0)])
    task.put([record(i, {"n": i, "s": f"v{i}"}) for i in range(3)])
    task.flush({})
    task.stop()
    first, data = CommitLog(tmp_path).refresh()
    assert (first.rows, first.files, first.offsets, first.start_offsets) == (0, (), {}, {})
    assert [f["name"] for f in first.schema["fields"]][:2] == ["n", "s"]
    assert data.schema is None and data.rows == 3 and data.offsets == {("t", 0): 3}
    assert sorted(r["n"] for r in spark.read.parquet(str(tmp_path)).collect()) == [0, 1, 2]


def test_a_task_losing_the_race_to_fix_the_schema_converts_to_the_winners(
        spark, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first, _ = start_task(tmp_path, **{"task.id": 0})
    second, _ = start_task(tmp_path, **{"task.id": 1})  # both started before any schema
    first.open([TP("t", 0)])
    second.open([TP("t", 1)])
    first.put([record(0, {"n": 1}, partition=0)])
    second.put([record(0, {"n": 2, "extra": "x"}, partition=1)])
    first.flush({})  # fixes n bigint

    # The second task looks at the log before the first commits (as if both inferred at once):
    # it infers (n, extra), and its schema entry then conflicts with the first's.
    real_refresh, looks = second.log.refresh, []

    def stale_first_look() -> list:
        looks.append(1)
        return [] if len(looks) == 1 else real_refresh()

    second.log.refresh = stale_first_look
    second.flush({})
    assert "another task fixed the table schema first" in caplog.text
    first.stop()
    second.stop()
    log = CommitLog(tmp_path)
    entries = log.refresh()
    assert [e.schema is not None for e in entries] == [True, False, False]
    df = spark.read.parquet(str(tmp_path))
    assert "extra" not in df.columns
    assert sorted((r["_partition"], r["n"]) for r in df.collect()) == [(0, 1), (1, 2)]
