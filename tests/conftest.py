from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import (  # noqa: E402
    EmbeddedBroker,
    ReferenceCluster,
    ReferenceKafka,
    reference_unavailable,
)

TESTS = Path(__file__).parent
# The suites that talk to the broker only through Kafka clients: with --kafka=reference their
# `broker` fixture is Apache Kafka. Every other test that takes `broker` checks our broker
# itself (its internals, its files, its answers) and keeps it whatever the option says.
SWITCHED = (TESTS / "runtime", TESTS / "faults", TESTS / "unit" / "test_kafka_internals.py",
            TESTS / "ops", TESTS / "connect" / "test_exactly_once.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kafka", choices=("bundled", "reference", "cluster"), default="bundled",
        help="the broker of the runtime suites (tests/runtime, tests/faults, "
             "tests/unit/test_kafka_internals.py): our bundled broker (default), Apache "
             "Kafka from tests/reference/kafka.py (`make kafka-reference`), one per test, or "
             "a 3-node Apache Kafka cluster (replication factor 3, min.insync.replicas 2)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "on_kafka: also run on Apache Kafka by `make test` (pytest -m on_kafka "
        "--kafka=reference): keep the marked set within about 3 minutes there")


def switched(path: Path) -> bool:
    return any(path == root or root in path.parents for root in SWITCHED)


@pytest.fixture(scope="session")
def kafka_kind(request: pytest.FixtureRequest) -> str:
    """``bundled``, ``reference`` or ``cluster`` (--kafka); skips the test when Apache Kafka
    cannot run."""
    kind = request.config.getoption("--kafka")
    if kind in ("reference", "cluster"):
        reason = reference_unavailable()
        if reason:
            pytest.skip(reason)
    return kind


@pytest.fixture
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A fresh broker with its own data directory, stopped after the test: our embedded broker,
    or with --kafka=reference (cluster) in the runtime suites a fresh Apache Kafka node (3-node
    cluster), with the same `.bootstrap`."""
    kind = request.getfixturevalue("kafka_kind") if switched(Path(request.path)) else "bundled"
    if kind == "reference":
        instance = ReferenceKafka(tmp_path / "kafka").start()
    elif kind == "cluster":
        instance = ReferenceCluster(tmp_path / "kafka-cluster").start()
    else:
        instance = EmbeddedBroker(tmp_path / "broker").start()
    try:
        yield instance
    finally:
        instance.stop()
