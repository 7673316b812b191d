"""Reading an internal compacted topic's partition back at start (``__consumer_offsets``,
``__share_group_state``): every stored batch once, in offset order."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..records import BatchHeader, iter_batches

if TYPE_CHECKING:
    from ..storage.log import PartitionLog

log = logging.getLogger(__name__)

_READ_CHUNK = 1 << 20


def stored_batches(plog: PartitionLog) -> Iterator[tuple[bytes, BatchHeader]]:
    """(batch bytes, header) from the log start to its end; stops with a warning where the
    log cannot be read further (a batch larger than a read, say), never loops."""
    offset = plog.log_start_offset
    while offset < plog.next_offset:
        data = plog.read(offset, _READ_CHUNK)
        advanced = offset
        for pos, header in iter_batches(data):
            if header.last_offset >= offset:
                yield data[pos : pos + header.size], header
            advanced = header.last_offset + 1
        if advanced == offset:
            log.warning("%s: cannot read past offset %d", plog.directory, offset)
            return
        offset = advanced
