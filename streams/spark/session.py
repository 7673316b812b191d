"""One SparkSession per process, shared by the Spark sink's tasks and our tools.

``master`` is any Spark master (``local[*]`` by default) or a Spark Connect URL (``sc://host``).
Creating a session costs 10-20 s, so callers reuse the active one when it exists.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from streams.spark.java import ensure_java

DEFAULT_MASTER = "local[*]"
_lock = threading.Lock()

# Small-machine defaults: Spark's 200 shuffle partitions cost seconds per query on 2 cores.
_DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # Errors only from the JVM (see the file); a user's own extraJavaOptions replace this.
    "spark.driver.extraJavaOptions":
        f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}",
}


def get_spark_session(master: str | None = None, app_name: str = "streams",
                      conf: dict[str, str] | None = None) -> Any:
    """The active SparkSession, or a new one on ``master`` with ``conf`` applied.

    Also points PySpark's workers at this interpreter (so they import the same packages) and
    finds Java (see :func:`streams.spark.java.ensure_java`).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise RuntimeError("Spark support needs the 'spark' extra: "
                           "pip install 'streams[spark]'") from exc
    master = master or DEFAULT_MASTER
    with _lock:
        if master.startswith("sc://"):
            builder = SparkSession.builder.remote(master)
        else:
            active = SparkSession.getActiveSession()
            if active is not None:
                return active
            ensure_java()
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            builder = SparkSession.builder.master(master)
            for key, value in _DEFAULT_CONF.items():
                builder = builder.config(key, value)
        builder = builder.appName(app_name)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
