"""The at-least-once streaming query of the driver-kill suite (alos_kill_suite.py), in its own
process and SparkSession: topic SOURCE -> TARGET through the streams sink under
at_least_once, a micro-batch every 0.5 s of at most ``maxOffsetsPerTrigger`` records, its
checkpoint in CHECKPOINT. Prints STARTED once the query runs; once the file STOP exists it stops
the query and prints DONE. One query per driver (sink_query_app.py says why).

    python alos_query_app.py BOOTSTRAP SOURCE TARGET CHECKPOINT STOP
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from streams.spark import get_spark_session

# Spark's planning and commit workers must connect back within a fixed 10 s
# (PythonWorkerFactory.createSimpleWorker); on an overloaded machine they can miss it. The
# query is then restarted from its checkpoint, as a supervisor would (sink_query_app.py).
CONNECT_BACK = "connect back"
ATTEMPTS = 3


def main() -> None:
    bootstrap, source, target, checkpoint, stop_file = sys.argv[1:6]
    stop = Path(stop_file)
    spark = get_spark_session("local[2]", app_name="sink-alos-kill-test",
                              conf={"spark.sql.shuffle.partitions": "2",
                                    "spark.python.authenticate.socketTimeout": "120s"})
    spark.sparkContext.setLogLevel("ERROR")

    def start() -> Any:
        rows = (spark.readStream.format("streams")
                .option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
                .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "2000")
                .load()
                .selectExpr("key", "value"))
        return (rows.writeStream.format("streams")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", target)
                .option("processing.guarantee", "at_least_once")
                .option("checkpointLocation", checkpoint)
                .trigger(processingTime="500 milliseconds")
                .start())

    query = start()
    print("STARTED", flush=True)
    attempts = 1
    while not stop.exists():
        try:
            ended = query.awaitTermination(0.2)  # also the pace of the looks at STOP
        except Exception:  # noqa: BLE001 - the query failed; its error is in exception()
            ended = True
        if not ended:
            continue
        error = query.exception()
        if error is None or CONNECT_BACK not in str(error) or attempts >= ATTEMPTS:
            print(f"FAILED: {error or 'the query ended by itself'}", flush=True)
            sys.exit(1)
        print("RESTARTED: a Python worker did not connect back", flush=True)
        query = start()
        attempts += 1
    query.stop()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
