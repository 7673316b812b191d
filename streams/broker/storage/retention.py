"""Time- and size-based retention for ``cleanup.policy=delete``: whole closed segments only."""

from __future__ import annotations

from .log import PartitionLog


def apply_retention(plog: PartitionLog, retention_ms: int, retention_bytes: int, now_ms: int) -> int:
    """Delete the oldest segments past ``retention.ms`` or beyond ``retention.bytes``.

    Returns how many segments went. An expired active segment is rolled first so that it can
    go too, as Kafka does. The log start offset moves to the first offset that remains.
    """
    if plog.cleaning:
        return 0
    deleted = 0
    if retention_ms >= 0:
        if all(now_ms - s.max_timestamp > retention_ms for s in plog.segments if s.size):
            plog.roll()
        while len(plog.segments) > 1 and now_ms - plog.segments[0].max_timestamp > retention_ms:
            plog.advance_log_start(plog.segments[1].base_offset)
            deleted += 1
    if retention_bytes >= 0:
        while (
            len(plog.segments) > 1
            and plog.size_bytes - plog.segments[0].size >= retention_bytes
        ):
            plog.advance_log_start(plog.segments[1].base_offset)
            deleted += 1
    return deleted
