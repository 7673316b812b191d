"""One SparkSession for the whole test run (starting one costs 10-20 s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from streams.spark import get_spark_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = get_spark_session("local[2]", app_name="streams-tests",
                                conf={"spark.sql.warehouse.dir": str(warehouse)})
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
