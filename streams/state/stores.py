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
    kind: str = "kv"  # "kv" | "window" | "session" | "suppress"
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    store_type: str = "rocksdb"
    logging: bool = True
    timestamped: bool = True
    retention_ms: int | None = None
    window_size_ms: int | None = None
    retain_duplicates: bool = False
    changelog_config: dict[str, str] = field(default_factory=dict)

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
    from .session import build_session_store
    from .window import build_window_store

    STORE_FACTORIES["window"] = build_window_store
    STORE_FACTORIES["session"] = build_session_store
    STORE_FACTORIES["suppress"] = build_buffer


_register_windowed_kinds()


class Stores:
    """Factories named like Kafka's ``Stores`` for Processor API users."""

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
