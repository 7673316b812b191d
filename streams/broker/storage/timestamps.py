"""Exact record offsets for ListOffsets by timestamp.

The time index finds the first batch whose max timestamp reaches the target; the exact record
needs the batch's record timestamps, so this (rare, never hot) path decodes one batch.
"""

from __future__ import annotations

import logging

from ..compression import CodecError
from ..records import ATTR_TIMESTAMP_LOG_APPEND, decode_records, parse_header

log = logging.getLogger(__name__)


def first_record_at_or_after(batch: bytes, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record in ``batch`` with timestamp >= ``timestamp``."""
    header = parse_header(batch)
    if header.attributes & ATTR_TIMESTAMP_LOG_APPEND:
        return header.base_offset, header.max_timestamp
    try:
        records = decode_records(batch)
    except CodecError as exc:
        log.warning("ListOffsets falls back to the batch base offset: %s", exc)
        return header.base_offset, header.max_timestamp
    for record in records:
        if record.timestamp >= timestamp:
            return record.offset, record.timestamp
    return header.base_offset, header.max_timestamp


def record_with_timestamp(batch: bytes, timestamp: int) -> int:
    """Offset of the first record in ``batch`` holding ``timestamp`` (ListOffsets
    MAX_TIMESTAMP answers the record's offset, KIP-734, not its batch's base offset)."""
    header = parse_header(batch)
    if header.attributes & ATTR_TIMESTAMP_LOG_APPEND:
        return header.base_offset
    try:
        records = decode_records(batch)
    except CodecError as exc:
        log.warning("ListOffsets falls back to the batch base offset: %s", exc)
        return header.base_offset
    for record in records:
        if record.timestamp == timestamp:
            return record.offset
    return header.base_offset
