"""A schema registry with Confluent Schema Registry's REST API, and a small client for it.

``SchemaRegistry`` (the server, schemas in a compacted ``_schemas`` topic) and
``SchemaRegistryClient`` load lazily: importing this package imports neither aiohttp nor
fastavro.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RegistryError", "SchemaRegistry", "SchemaRegistryClient"]


def __getattr__(name: str) -> Any:
    if name == "SchemaRegistry":
        from .server import SchemaRegistry

        return SchemaRegistry
    if name == "SchemaRegistryClient":
        from .client import SchemaRegistryClient

        return SchemaRegistryClient
    if name == "RegistryError":
        from .errors import RegistryError

        return RegistryError
    raise AttributeError(name)
