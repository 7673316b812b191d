"""``Materialized``: how a DSL result is stored (name, serdes, RocksDB or memory, retention)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from ..serde import Serde
from ..state.stores import STORE_TYPES, StoreSupplier

Duration = int | datetime.timedelta


def to_ms(value: Duration | None) -> int | None:
    """Durations are int milliseconds or ``datetime.timedelta``."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a duration is int milliseconds or a timedelta, got {value!r}")
    return value


@dataclass
class Materialized:
    name: str | None = None
    key_serde: Serde[Any] | None = None
    value_serde: Serde[Any] | None = None
    store_type: str = "rocksdb"
    retention: Duration | None = None
    logging: bool = True

    def __init__(self, name: str | None = None, *, key_serde: Serde[Any] | None = None,
                 value_serde: Serde[Any] | None = None, store_type: str = "rocksdb",
                 retention: Duration | None = None, logging: bool = True) -> None:
        if store_type not in STORE_TYPES:
            raise ValueError(f"Materialized store_type must be one of {STORE_TYPES}, "
                             f"got {store_type!r}")
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.store_type = store_type
        self.retention = retention
        self.logging = logging
        self.supplier: StoreSupplier | None = None

    @classmethod
    def as_(cls, name_or_supplier: str | StoreSupplier) -> Materialized:
        """Kafka's ``Materialized.as``: a store name, or a store supplier, today a versioned
        one (``Stores.persistent_versioned_key_value_store``; KIP-889)."""
        if isinstance(name_or_supplier, str):
            return cls(name_or_supplier)
        if isinstance(name_or_supplier, StoreSupplier) and name_or_supplier.kind == "versioned":
            mat = cls(name_or_supplier.name, store_type=name_or_supplier.store_type)
            mat.supplier = name_or_supplier
            return mat
        raise TypeError("Materialized.as_ takes a store name or a versioned store supplier "
                        "(Stores.persistent_versioned_key_value_store), got "
                        f"{name_or_supplier!r}")

    def with_key_serde(self, key_serde: Serde[Any]) -> Materialized:
        self.key_serde = key_serde
        return self

    def with_value_serde(self, value_serde: Serde[Any]) -> Materialized:
        self.value_serde = value_serde
        return self

    @property
    def versioned(self) -> bool:
        """Whether this materializes into a versioned key-value store (KIP-889)."""
        return self.supplier is not None and self.supplier.kind == "versioned"

    @property
    def retention_ms(self) -> int | None:
        return to_ms(self.retention)

    @classmethod
    def of(cls, value: Materialized | str | None) -> Materialized:
        """Anywhere a Materialized is taken, a plain store name is too."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Materialized):
            return value
        raise TypeError(f"expected Materialized or a store name, got {value!r}")
