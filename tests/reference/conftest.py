"""Fixtures: the reference Apache Kafka (one per session) and our broker (one per test).

Without java or mvn, or when the jars cannot be fetched, every reference test skips with one
line saying why; that is the only skip allowed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import EmbeddedBroker, free_port, reference_unavailable

from . import kafka
from .compare import Pair, Side, common_versions
from .wire import api_versions


def unavailable() -> str | None:
    """Why the reference Kafka cannot run here, or None."""
    return reference_unavailable("the reference Kafka")


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka.KafkaNode]:
    """Apache Kafka (KRaft, one node) on a free port in a temporary directory."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    node = kafka.KafkaNode(free_port(), tmp_path_factory.mktemp("kafka")).start()
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="session")
def versions(reference_kafka: kafka.KafkaNode, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[int, int]:
    """The highest version of each API that both brokers (and kio) implement."""
    ours = EmbeddedBroker(tmp_path_factory.mktemp("versions")).start()
    try:
        return common_versions(api_versions(ours.bootstrap), api_versions(reference_kafka.bootstrap))
    finally:
        ours.stop()


@pytest.fixture
def bundled(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """Our broker, fresh for each test (the reference Kafka is shared: use unique names)."""
    instance = EmbeddedBroker(tmp_path / "bundled").start()
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def pair(reference_kafka: kafka.KafkaNode, bundled: EmbeddedBroker, versions: dict[int, int]
         ) -> Iterator[Pair]:
    both = Pair(Side("ours", bundled.bootstrap, versions),
                Side("kafka", reference_kafka.bootstrap, versions))
    try:
        yield both
    finally:
        both.close()
