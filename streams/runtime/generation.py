"""One generation of the stream thread's clients, and everything that uses them.

A generation owns a consumer, a producer, a record collector, a state updater, the tasks
created while it is current (a TaskManager) and its Committer. It starts when the thread
(re)joins the group and ends when the thread leaves, fails a commit, is fenced or loses the
broker; then it is closed as a whole and the next one starts with fresh clients. Its rebalance
listener ignores every callback once it is closed, so no task is ever created with a
collector that nothing flushes any more.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from ..kafka import clients
from ..kafka.batching import RecordCollector
from ..kafka.internals import stop_client
from .assignor import StreamsPartitionAssignor
from .committer import Committer
from .guarantee import ProcessingGuarantee
from .state_updater import StateUpdater
from .task_manager import TaskManager

log = logging.getLogger(__name__)


class ClientGeneration:
    def __init__(self, number: int, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer,
                 collector: RecordCollector, tasks: TaskManager, committer: Committer,
                 updater: StateUpdater, assignor: StreamsPartitionAssignor | None = None
                 ) -> None:
        self.number = number
        self.consumer = consumer
        self.producer = producer
        self.collector = collector
        self.tasks = tasks
        self.committer = committer
        self.updater = updater
        self.assignor = assignor  # this member's latest assignment: its standby tasks
        self.closed = False
        self.rebalancing = False

    async def close(self) -> None:
        """Stop the clients and close whatever task is left (dirty: nothing of it was
        committed by this generation's producer after this point)."""
        self.closed = True
        # Every step runs whatever the one before raised: a consumer left running here stays
        # in the group as a member that never polls (see streams.kafka.internals.stop_client).
        try:
            await self.updater.close()
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # the app is being stopped
            log.info("closing the state updater was cancelled inside aiokafka")
        for client in (self.consumer, self.producer):
            await stop_client(client)
        leftover = self.tasks.close_all(clean=False)
        if leftover:
            log.warning("generation %d ended with %d task(s) still open; closed them dirty",
                        self.number, leftover)

    def __repr__(self) -> str:
        return f"ClientGeneration({self.number}, closed={self.closed})"


def build_producer(client_kwargs: dict[str, Any], guarantee: ProcessingGuarantee,
                   transactional_id: str, max_batch_size: int,
                   transaction_timeout_ms: int) -> AIOKafkaProducer:
    return clients.producer(client_kwargs, acks="all", max_batch_size=max_batch_size,
                            **guarantee.producer_kwargs(transactional_id,
                                                        transaction_timeout_ms))
