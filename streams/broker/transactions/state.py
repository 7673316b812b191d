"""Transaction metadata and its log in the compacted ``__transaction_state`` topic.

One record per transactional id (key = the id, value = JSON of the metadata), the newest wins;
compaction keeps the topic at one record per id. JSON rather than Kafka's binary layout: the
topic is internal to this broker and JSON keeps it inspectable with `streams consume`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..records import Record, build_batch, decode_records, iter_batches, validate_produced

if TYPE_CHECKING:
    from ..topics import Topic

log = logging.getLogger(__name__)

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = 0
    updated_ms: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)

    def to_json(self) -> bytes:
        return json.dumps({
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "state": self.state,
            "partitions": sorted([t, p] for t, p in self.partitions),
            "start_ms": self.start_ms,
            "updated_ms": self.updated_ms,
        }).encode()

    @classmethod
    def from_json(cls, transactional_id: str, raw: bytes) -> TxnMetadata:
        data = json.loads(raw)
        return cls(
            transactional_id,
            int(data["producer_id"]),
            int(data["producer_epoch"]),
            int(data["timeout_ms"]),
            str(data["state"]),
            {(str(t), int(p)) for t, p in data["partitions"]},
            int(data["start_ms"]),
            int(data["updated_ms"]),
        )


def partition_for(transactional_id: str, partitions: int) -> int:
    """Stable partition of a transactional id (crc32: the same across processes and restarts)."""
    return zlib.crc32(transactional_id.encode()) % partitions


class TransactionLog:
    def __init__(self, topic: Topic) -> None:
        self.topic = topic

    def replay(self) -> Iterator[TxnMetadata]:
        """Latest metadata per transactional id, read from every partition."""
        latest: dict[str, bytes | None] = {}
        for plog in self.topic.partitions:
            offset = plog.log_start_offset
            while offset < plog.next_offset:
                data = plog.read(offset, 1 << 20)
                if not data:
                    break
                for _pos, header in iter_batches(data):
                    if not header.is_control:
                        for record in decode_records(data[_pos : _pos + header.size]):
                            if record.key is not None:
                                latest[record.key.decode(errors="replace")] = record.value
                    offset = header.last_offset + 1
        for tid, value in latest.items():
            if value is None:
                continue
            try:
                yield TxnMetadata.from_json(tid, value)
            except (ValueError, KeyError, TypeError) as exc:
                # Kafka's TransactionStateManager skips records it cannot interpret while loading
                # ("Unknown message key ... Ignoring it"); refusing would keep the whole broker
                # from starting.
                log.warning("skipping unreadable record for transactional id %r in %s: %s",
                            tid, self.topic.name, exc)

    async def write(self, meta: TxnMetadata, durable: bool = True) -> None:
        """Append the metadata; with ``durable`` return only once it is fsynced."""
        plog = self.topic.partitions[partition_for(meta.transactional_id, len(self.topic.partitions))]
        batch = build_batch([Record(meta.transactional_id.encode(), meta.to_json(), meta.updated_ms)])
        plog.append(bytearray(batch), validate_produced(batch))
        if durable:
            await plog.flush_to(plog.next_offset)
