"""Store builders: how a topology declares a store, and how a task makes one.

A ``StoreBuilder`` is a description (name, kind, serdes, RocksDB or memory, logging); each task
builds its own instance in its own directory. Kinds register a factory in ``STORE_FACTORIES``
so window and session stores plug in beside key-value ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..serde import Serde
from .api import ChangeLogger
from .kv import KeyValueStore
from .memory import InMemoryBytesStore
from .rocksdb import RocksDBBytesStore

STORE_TYPES = ("rocksdb", "memory")


@dataclass
class StoreInitContext:
    """What a task hands a builder: where to keep files, how to log changes, default serdes."""

    task_dir: Path
    logger_for: Callable[[str], ChangeLogger | None]
    default_key_serde: Serde[Any]
    default_value_serde: Serde[Any]


@dataclass
class StoreBuilder:
    name: str
    kind: str = "kv"  # "kv" | "window" | "session" | "suppress" | "versioned" | "join-buffer"
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    store_type: str = "rocksdb"
    logging: bool = True
    timestamped: bool = True
    retention_ms: int | None = None
    window_size_ms: int | None = None
    retain_duplicates: bool = False
    changelog_config: dict[str, str] = field(default_factory=dict)
    # topology.optimization reuse.ktable.source.topics: the input topic this (unlogged)
    # store restores from instead of a changelog topic
    source_changelog: str | None = None

    def __post_init__(self) -> None:
        if self.store_type not in STORE_TYPES:
            raise ValueError(
                f"store {self.name!r}: store_type {self.store_type!r} is not one of {STORE_TYPES}"
            )
        if self.kind not in STORE_FACTORIES:
            raise ValueError(f"store {self.name!r}: unknown store kind {self.kind!r}")

    def with_logging_disabled(self) -> StoreBuilder:
        self.logging = False
        return self

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StoreBuilder:
        self.logging = True
        self.changelog_config = dict(config or {})
        return self

    def build(self, ctx: StoreInitContext) -> Any:
        return STORE_FACTORIES[self.kind](self, ctx)

    def bytes_store(self, ctx: StoreInitContext, suffix: str = "") -> Any:
        name = self.name + suffix
        if self.store_type == "memory":
            return InMemoryBytesStore(name)
        return RocksDBBytesStore(name, ctx.task_dir / "rocksdb" / name)

    def serdes(self, ctx: StoreInitContext) -> tuple[Serde[Any], Serde[Any]]:
        return (self.key_serde or ctx.default_key_serde,
                self.value_serde or ctx.default_value_serde)


def _build_kv(builder: StoreBuilder, ctx: StoreInitContext) -> KeyValueStore:
    key_serde, value_serde = builder.serdes(ctx)
    return KeyValueStore(
        builder.name,
        builder.bytes_store(ctx),
        key_serde,
        value_serde,
        timestamped=builder.timestamped,
        logger=ctx.logger_for(builder.name) if builder.logging else None,
    )


STORE_FACTORIES: dict[str, Callable[[StoreBuilder, StoreInitContext], Any]] = {"kv": _build_kv}


def _register_windowed_kinds() -> None:
    from .buffer import build_buffer
    from .join_buffer import build_join_buffer
    from .session import build_session_store
    from .versioned import build_versioned_store
    from .window import build_window_store

    STORE_FACTORIES["window"] = build_window_store
    STORE_FACTORIES["session"] = build_session_store
    STORE_FACTORIES["suppress"] = build_buffer
    STORE_FACTORIES["versioned"] = build_versioned_store  # KIP-889 (versioned.py)
    STORE_FACTORIES["join-buffer"] = build_join_buffer  # KIP-923 (join_buffer.py)


_register_windowed_kinds()


@dataclass(frozen=True)
class StoreSupplier:
    """What Kafka's ``Stores.persistentWindowStore(...)`` and friends return: the store's name,
    kind, RocksDB or memory, and its time settings; a ``*_store_builder`` adds the serdes."""

    name: str
    kind: str
    store_type: str
    retention_ms: int | None = None
    window_size_ms: int | None = None
    retain_duplicates: bool = False

    def __post_init__(self) -> None:
        for field_name in ("retention_ms", "window_size_ms"):
            value = getattr(self, field_name)
            if value is not None and value < 0:
                raise ValueError(f"store {self.name!r}: {field_name} must be >= 0, got {value}")
        if self.kind == "window" and (self.window_size_ms or 0) > (self.retention_ms or 0):
            raise ValueError(f"store {self.name!r}: the retention ({self.retention_ms} ms) must "
                             f"be at least the window size ({self.window_size_ms} ms)")


def _ms(value: Any) -> int:
    """Durations are int milliseconds or ``datetime.timedelta``."""
    total = getattr(value, "total_seconds", None)
    return int(total() * 1000) if callable(total) else int(value)


def _from_supplier(supplier: StoreSupplier, kind: str, builder_name: str,
                   key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                   timestamped: bool) -> StoreBuilder:
    if not isinstance(supplier, StoreSupplier) or supplier.kind != kind:
        store = f"{kind}_key_value_store" if kind == "versioned" else f"{kind}_store"
        raise TypeError(f"Stores.{builder_name} takes a {kind} store supplier "
                        f"(Stores.persistent_{store} / in_memory_{store}), got {supplier!r}")
    return StoreBuilder(supplier.name, kind, key_serde, value_serde, supplier.store_type,
                        timestamped=timestamped, retention_ms=supplier.retention_ms,
                        window_size_ms=supplier.window_size_ms,
                        retain_duplicates=supplier.retain_duplicates)


class Stores:
    """Factories named like Kafka's ``Stores`` for Processor API users."""

    @staticmethod
    def persistent_window_store(name: str, retention_period: Any, window_size: Any,
                                retain_duplicates: bool = False) -> StoreSupplier:
        return StoreSupplier(name, "window", "rocksdb", _ms(retention_period),
                             _ms(window_size), retain_duplicates)

    @staticmethod
    def in_memory_window_store(name: str, retention_period: Any, window_size: Any,
                               retain_duplicates: bool = False) -> StoreSupplier:
        return StoreSupplier(name, "window", "memory", _ms(retention_period),
                             _ms(window_size), retain_duplicates)

    @staticmethod
    def persistent_session_store(name: str, retention_period: Any) -> StoreSupplier:
        return StoreSupplier(name, "session", "rocksdb", _ms(retention_period))

    @staticmethod
    def in_memory_session_store(name: str, retention_period: Any) -> StoreSupplier:
        return StoreSupplier(name, "session", "memory", _ms(retention_period))

    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention: Any
                                             ) -> StoreSupplier:
        """A RocksDB versioned key-value store keeping ``history_retention`` of history
        (KIP-889; versioned.py); for ``Materialized.as_`` or ``versioned_key_value_store_builder``."""
        return StoreSupplier(name, "versioned", "rocksdb", _ms(history_retention))

    @staticmethod
    def in_memory_versioned_key_value_store(name: str, history_retention: Any
                                            ) -> StoreSupplier:
        """The same in memory (ours: Kafka has only the RocksDB one)."""
        return StoreSupplier(name, "versioned", "memory", _ms(history_retention))

    @staticmethod
    def versioned_key_value_store_builder(supplier: StoreSupplier,
                                          key_serde: Serde[Any] | None = None,
                                          value_serde: Serde[Any] | None = None
                                          ) -> StoreBuilder:
        """A versioned store for the Processor API: ``get(key, as_of_timestamp)`` and
        ``put(key, value, timestamp)`` (versioned.py)."""
        from .versioned import changelog_config

        builder = _from_supplier(supplier, "versioned", "versioned_key_value_store_builder",
                                 key_serde, value_serde, False)
        builder.changelog_config = changelog_config(supplier.retention_ms or 0)
        return builder

    @staticmethod
    def window_store_builder(supplier: StoreSupplier, key_serde: Serde[Any] | None = None,
                             value_serde: Serde[Any] | None = None, *,
                             timestamped: bool = False) -> StoreBuilder:
        """A window store for ``Topology.add_state_store`` / ``StreamsBuilder.add_state_store``
        (``timestamped=True`` is Kafka's ``timestampedWindowStoreBuilder``)."""
        return _from_supplier(supplier, "window", "window_store_builder", key_serde,
                              value_serde, timestamped)

    @staticmethod
    def session_store_builder(supplier: StoreSupplier, key_serde: Serde[Any] | None = None,
                              value_serde: Serde[Any] | None = None) -> StoreBuilder:
        return _from_supplier(supplier, "session", "session_store_builder", key_serde,
                              value_serde, False)

    @staticmethod
    def key_value_store_builder(
        name: str,
        key_serde: Serde[Any] | None = None,
        value_serde: Serde[Any] | None = None,
        *,
        persistent: bool = True,
        timestamped: bool = False,
    ) -> StoreBuilder:
        return StoreBuilder(name, "kv", key_serde, value_serde,
                            "rocksdb" if persistent else "memory", timestamped=timestamped)
