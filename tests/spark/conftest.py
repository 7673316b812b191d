"""One SparkSession for the whole test run (starting one costs 10-20 s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from streams.spark import get_spark_session

    session = get_spark_session("local[2]", app_name="streams-tests")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
