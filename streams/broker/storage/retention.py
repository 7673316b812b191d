"""Time- and size-based retention for ``cleanup.policy=delete``: whole closed segments only.

Each deletion is logged as Kafka's UnifiedLog logs it ("Deleting segments due to <reason>:
<segments>", with the reasons of `RetentionMsBreach`, `RetentionSizeBreach` and
`StartOffsetBreach`), so an operator can tell why data went.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .log import PartitionLog
from .segment import Segment

log = logging.getLogger(__name__)


def describe(segment: Segment) -> str:
    return (f"LogSegment(baseOffset={segment.base_offset}, size={segment.size}, "
            f"largestRecordTimestamp={segment.max_timestamp})")


def log_deletion(plog: PartitionLog, reason: str, segments: Sequence[Segment]) -> None:
    if segments:
        log.info("[%s] Deleting segments due to %s: %s", plog.directory.name, reason,
                 ",".join(describe(s) for s in segments))


def segments_below(plog: PartitionLog, offset: int) -> list[Segment]:
    """The whole segments a log start offset of ``offset`` removes (never the active one)."""
    return [s for i, s in enumerate(plog.segments[:-1])
            if plog.segments[i + 1].base_offset <= offset]


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
        expired = 0
        while (expired < len(plog.segments) - 1
               and now_ms - plog.segments[expired].max_timestamp > retention_ms):
            expired += 1
        if expired:
            log_deletion(plog, f"retention time {retention_ms}ms breach based on the largest "
                         "record timestamp in the segment", plog.segments[:expired])
            plog.advance_log_start(plog.segments[expired].base_offset)
            deleted += expired
    if retention_bytes >= 0:
        size = plog.size_bytes
        over = 0
        while over < len(plog.segments) - 1 and size - plog.segments[over].size >= retention_bytes:
            size -= plog.segments[over].size
            over += 1
        if over:
            log_deletion(plog, f"retention size in bytes {retention_bytes} breach. Log size "
                         f"after deletion will be {size}.", plog.segments[:over])
            plog.advance_log_start(plog.segments[over].base_offset)
            deleted += over
    return deleted
