"""Group coordinator (placeholder until the classic group protocol lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server import Broker


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
