"""The sink's kill test's streaming queries, in their own process and SparkSession, one after the
other: topic ``source`` -> ``target-eos`` (exactly_once_v2), then ``source`` -> ``target-alos``
(at_least_once), each with its own checkpoint, ``trigger(availableNow=True)`` in micro-batches
of at most ``maxOffsetsPerTrigger`` records. Prints STARTED, then DONE when both finished
cleanly.

    python sink_query_app.py BOOTSTRAP SOURCE CHECKPOINT_DIR

The queries never run at the same time: Spark 4.3 is not safe with two streaming reads of one
Python data source starting together in a driver. Each start of a streaming read
(``PythonStreamingSourceRunner.init``) writes its worker's environment variables into the
registered data source's ``envVars``, one Scala ``mutable.HashMap`` shared by every query of
that format in the driver and serialized into each of their tasks. Two starts at once can
corrupt it (size 6, 5 entries); from then on every task of every ``streams`` query in that
driver fails with "Task not serializable ... IllegalStateException: Illegal size 5 of
collection, expected 6", so restarting the query in the same driver cannot help. A start while
another query serializes a task can resize the map under that serialization and fail its batch.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from streams.spark import get_spark_session

# Spark's planning and commit workers must connect back within a fixed 10 s
# (PythonWorkerFactory.createSimpleWorker); on an overloaded machine they can miss it. A
# supervisor would restart the query from its checkpoint, and so does this app (the sink's
# guarantee is what the test checks, also across such restarts).
CONNECT_BACK = "connect back"
ATTEMPTS = 3


def main() -> None:
    bootstrap, source, checkpoints = sys.argv[1:4]
    spark = get_spark_session("local[2]", app_name="sink-kill-test",
                              conf={"spark.sql.shuffle.partitions": "2",
                                    # slow Python worker start-ups on a loaded machine
                                    "spark.python.authenticate.socketTimeout": "120s"})
    spark.sparkContext.setLogLevel("ERROR")

    def start(guarantee: str, short: str) -> Any:
        rows = (spark.readStream.format("streams")
                .option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
                .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "2000")
                .load()
                .selectExpr("key", "value", "headers"))
        return (rows.writeStream.format("streams")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", f"target-{short}")
                .option("processing.guarantee", guarantee)
                .option("checkpointLocation", f"{checkpoints}/{short}")
                .trigger(availableNow=True)
                .start())

    print("STARTED", flush=True)
    for guarantee, short in (("exactly_once_v2", "eos"), ("at_least_once", "alos")):
        for _attempt in range(ATTEMPTS):
            query = start(guarantee, short)
            with contextlib.suppress(Exception):  # a failure is in exception() too
                query.awaitTermination()
            error = query.exception()
            if error is None:
                break
            if CONNECT_BACK not in str(error):
                print(f"FAILED {short}: {error}", flush=True)
                sys.exit(1)
            print(f"RESTARTED {short}: a Python worker did not connect back", flush=True)
        else:
            print(f"FAILED {short} {ATTEMPTS} times", flush=True)
            sys.exit(1)
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
