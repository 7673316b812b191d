from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import EmbeddedBroker  # noqa: E402


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A fresh embedded broker with its own data directory; stopped after the test."""
    instance = EmbeddedBroker(tmp_path / "broker").start()
    try:
        yield instance
    finally:
        instance.stop()
