"""The processing guarantee (``processing.guarantee``) as one object.

What differs between at_least_once and exactly_once_v2 for the clients and the reads of the
runtime is asked here (isolation level, where a partition ends, the producer's settings, the
default commit interval) instead of every part branching on a flag of its own; the commit
itself (a transaction or not) asks ``exactly_once``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition

AT_LEAST_ONCE_NAME = "at_least_once"
EXACTLY_ONCE_V2_NAME = "exactly_once_v2"


@dataclass(frozen=True)
class ProcessingGuarantee:
    name: str  # "at_least_once" or "exactly_once_v2"

    @property
    def exactly_once(self) -> bool:
        return self.name == EXACTLY_ONCE_V2_NAME

    @property
    def isolation_level(self) -> str:
        """Of every consumer the runtime reads input, changelogs and global topics with:
        under exactly-once no aborted (or still open) transaction's records."""
        return "read_committed" if self.exactly_once else "read_uncommitted"

    @property
    def default_commit_interval_ms(self) -> int:
        """Kafka Streams' commit.interval.ms default: 100 under exactly-once, else 30 s."""
        return 100 if self.exactly_once else 30_000

    def end_offset(self, consumer: Any, tp: TopicPartition) -> int | None:
        """Where the partition ends for this consumer as its last fetch saw it: the last
        stable offset under read_committed, the high watermark otherwise (lag, caught-up)."""
        return consumer.last_stable_offset(tp) if self.exactly_once else consumer.highwater(tp)

    def producer_kwargs(self, transactional_id: str,
                        transaction_timeout_ms: int) -> dict[str, Any]:
        """The stream thread's producer: idempotent and transactional under exactly-once."""
        if not self.exactly_once:
            return {}
        return {"transactional_id": transactional_id, "enable_idempotence": True,
                "transaction_timeout_ms": transaction_timeout_ms}


AT_LEAST_ONCE = ProcessingGuarantee(AT_LEAST_ONCE_NAME)
EXACTLY_ONCE_V2 = ProcessingGuarantee(EXACTLY_ONCE_V2_NAME)
