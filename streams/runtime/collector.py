"""The streams runtime's ``RecordCollector``; it lives in :mod:`streams.kafka_batching` so the
Connect worker (which may not import runtime internals) batches its sends the same way."""

from __future__ import annotations

from ..kafka_batching import RecordCollector, default_partition

__all__ = ["RecordCollector", "default_partition"]
