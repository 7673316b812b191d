"""One bundled broker and one schema registry per test module (starting them costs ~0.5 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import EmbeddedBroker

from streams.registry import SchemaRegistry


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker(tmp_path_factory.mktemp("registry-broker")).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def registry(registry_broker: EmbeddedBroker) -> Iterator[SchemaRegistry]:
    with SchemaRegistry(registry_broker.bootstrap, port=0) as server:
        yield server
