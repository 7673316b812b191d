from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "connect"))  # worker_helpers

from helpers import BrokerProcess  # noqa: E402


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    """Two of our brokers, each in its own process: clusters A and B."""
    a = BrokerProcess(tmp_path / "a" / "data").start()
    b = None
    try:
        b = BrokerProcess(tmp_path / "b" / "data").start()
        yield a, b
    finally:
        if b is not None:
            b.stop()
        a.stop()
