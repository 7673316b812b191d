"""SparkSink against a Spark Connect server (``spark.master=sc://...``).

The server runs in the test session's JVM (the Spark Connect plugin, see conftest.py); the sink
runs in a child process, as a Connect client with no JVM of its own, and shares the filesystem
with the server (the commit protocol renames the files Spark wrote).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from connect.spark.commit_log import CommitLog

pytestmark = pytest.mark.spark

SINK_RUN = textwrap.dedent("""
    import json, sys
    from connect.api import SinkTaskContext, TopicPartition
    from connect.records import SinkRecord
    from connect.spark import SparkSinkTask

    config = json.loads(sys.argv[1])
    task = SparkSinkTask()
    task.initialize(SinkTaskContext({}, None))
    task.start(config)
    print(type(task.spark).__module__, flush=True)
    task.open([TopicPartition("t", 0), TopicPartition("t", 1)])
    for start in range(0, 1000, 250):
        task.put([SinkRecord("t", i % 2, None, None, None,
                             json.dumps({"n": i, "s": f"v{i}", "x": i / 4}).encode(), i // 2,
                             1_700_000_000_000 + i)
                  for i in range(start, start + 250)])
    task.stop()
""")


JSON_BYTES = {"value.format": "json",
              "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}


def run_sink(config: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", SINK_RUN, json.dumps({**JSON_BYTES, **config})],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_sink_writes_through_spark_connect(spark, spark_connect_url: str, tmp_path: Path) -> None:
    path = tmp_path / "table"
    out = run_sink({"name": "connect-sink", "path": str(path), "spark.master": spark_connect_url,
                    "flush.size": "300"})
    assert "pyspark.sql.connect" in out  # a Connect client session, not a local JVM
    df = spark.read.parquet(str(path))
    assert dict(df.dtypes) == {"n": "bigint", "s": "string", "x": "double", "_topic": "string",
                               "_partition": "int", "_offset": "bigint",
                               "_timestamp": "timestamp"}
    rows = df.collect()
    assert sorted(r["n"] for r in rows) == list(range(1000))
    assert sorted((r["_partition"], r["_offset"]) for r in rows) == sorted(
        (i % 2, i // 2) for i in range(1000))
    log = CommitLog(path)
    log.refresh()
    assert log.rows == 1000 and log.offsets == {("t", 0): 500, ("t", 1): 500}


def test_sink_creates_a_metastore_table_through_spark_connect(spark, spark_connect_url: str
                                                              ) -> None:
    spark.sql("DROP TABLE IF EXISTS connect_events")
    try:
        run_sink({"name": "connect-table", "table": "connect_events",
                  "spark.master": spark_connect_url})
        rows = spark.table("connect_events").collect()
        assert sorted(r["n"] for r in rows) == list(range(1000))
    finally:
        spark.sql("DROP TABLE IF EXISTS connect_events")
