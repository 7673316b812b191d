"""One SparkSession for the whole test run (starting one costs 10-20 s); it also serves Spark
Connect on a free port (``spark_connect_url``), for the SparkSink's ``sc://`` test."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

_CONNECT_PORT: list[int] = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from streams.spark import get_spark_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    port = _free_port()
    session = get_spark_session("local[2]", app_name="streams-tests", conf={
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port)})
    if session.sparkContext.getConf().get("spark.connect.grpc.binding.port") == str(port):
        _CONNECT_PORT.append(port)
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_connect_url(spark: Any) -> str:
    """``sc://`` URL of the Spark Connect server running in the test session's JVM."""
    assert _CONNECT_PORT, "the test SparkSession was created before the spark fixture, " \
        "without the Spark Connect plugin"
    return f"sc://127.0.0.1:{_CONNECT_PORT[0]}"
