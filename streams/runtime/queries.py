"""Read-only views of local stores for interactive queries.

A store name covers one store instance per local task (one per partition); the view asks all of
them, as Kafka's ``CompositeReadOnlyKeyValueStore`` does. Writes are not offered.

Queries run on the caller's thread while the stream thread writes, so they go through
``read_only_view`` (streams/state/readonly.py): they read the record cache and the store
without ever flushing or writing either. Results are as fresh as the moment each store is read
(like Kafka's, not a snapshot across tasks).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..state.readonly import read_only_view

if TYPE_CHECKING:
    from .app import KafkaStreams


class InvalidStateStoreError(RuntimeError):
    """The store is not queryable right now (not running, rebalancing, restoring)."""


class ReadOnlyStoreView:
    def __init__(self, name: str, app: KafkaStreams) -> None:
        self.name = name
        self.app = app

    def _stores(self) -> list[Any]:
        stores = self.app.local_stores(self.name)
        if not stores and self.app.state.value not in ("RUNNING", "REBALANCING"):
            raise InvalidStateStoreError(
                f"store {self.name!r} is not available: the instance is {self.app.state.value}")
        return [read_only_view(store) for store in stores]

    # key-value stores
    def get(self, key: Any) -> Any:
        for store in self._stores():
            value = store.get(key)
            if value is not None:
                return value
        return None

    def get_with_timestamp(self, key: Any) -> Any:
        for store in self._stores():
            value = store.get_with_timestamp(key)
            if value is not None:
                return value
        return None

    def all(self) -> Iterator[tuple[Any, Any]]:
        return itertools.chain.from_iterable(s.all() for s in self._stores())

    def range(self, from_key: Any = None, to_key: Any = None) -> Iterator[tuple[Any, Any]]:
        return itertools.chain.from_iterable(s.range(from_key, to_key) for s in self._stores())

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._stores())

    # window and session stores
    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        results = [s.fetch(*args, **kwargs) for s in self._stores()]
        if len(args) + len(kwargs) == 2 and all(not hasattr(r, "__next__") and
                                                not isinstance(r, list) for r in results):
            return next((r for r in results if r is not None), None)  # fetch(key, time)
        return itertools.chain.from_iterable(results)

    def fetch_all(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return itertools.chain.from_iterable(s.fetch_all(*args, **kwargs) for s in self._stores())

    def find_sessions(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return itertools.chain.from_iterable(s.find_sessions(*args, **kwargs)
                                             for s in self._stores())
