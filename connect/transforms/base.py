"""The single message transform (SMT) and predicate protocols.

A transformation gets its settings from a connector config with the ``transforms.<alias>.``
prefix stripped, as strings (``{"field": "id", "static.value": "x"}``). ``apply`` returns a new
record built with ``record.new_record(...)``/``record.with_(...)``, or None to drop the record.
Bad settings raise :class:`streams.config.ConfigError` from ``configure``; a record the transform
cannot handle raises :class:`connect.data.DataException` from ``apply`` (the worker's
``errors.tolerance`` decides whether that fails the task or skips the record).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from connect.records import ConnectRecord


@runtime_checkable
class Transformation(Protocol):
    """Kafka's ``org.apache.kafka.connect.transforms.Transformation``."""

    def configure(self, configs: dict[str, str]) -> None:
        """Read this transform's settings (prefix already stripped)."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The transformed record, or None to drop it."""

    def close(self) -> None:
        """Release resources."""

    def config_def(self) -> dict[str, dict[str, Any]]:
        """name -> {"type", "default", "importance", "documentation"}: what ``configure`` reads."""


@runtime_checkable
class Predicate(Protocol):
    """Kafka's ``org.apache.kafka.connect.transforms.predicates.Predicate``."""

    def configure(self, configs: dict[str, str]) -> None:
        """Read this predicate's settings (prefix already stripped)."""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the transform it guards should apply to ``record``."""

    def close(self) -> None:
        """Release resources."""

    def config_def(self) -> dict[str, dict[str, Any]]:
        """name -> {"type", "default", "importance", "documentation"}."""
