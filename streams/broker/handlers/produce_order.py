"""Appends to a partition in arrival order while some produce requests check batches in a thread.

Most produce requests are checked and appended synchronously, in the order their tasks start.
A request whose batches must be decompressed (or are very large) is checked in a worker thread
instead, and every later request to the same partition queues behind it, so an idempotent
producer's pipelined batches still reach the log in sequence order.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..storage.log import PartitionLog

# Two workers: the machine's cores. cramjam releases the GIL while decompressing, and a bounded
# output buffer bounds each job, so a flood of bombs queues here instead of on the event loop or
# on the default executor that runs fsyncs.
_WORKERS = 2
_executor: ThreadPoolExecutor | None = None
_tails: WeakKeyDictionary[PartitionLog, asyncio.Future[None]] = WeakKeyDictionary()


def busy(partition: PartitionLog) -> bool:
    """True while an earlier request's append to ``partition`` is still pending."""
    return partition in _tails


def enter(partition: PartitionLog) -> tuple[asyncio.Future[None] | None, asyncio.Future[None]]:
    """Take the next place in ``partition``'s queue: (the place before ours, ours)."""
    previous = _tails.get(partition)
    mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    _tails[partition] = mine
    return previous, mine


async def wait_turn(previous: asyncio.Future[None] | None) -> None:
    if previous is not None:
        await asyncio.shield(previous)


def leave(partition: PartitionLog, mine: asyncio.Future[None]) -> None:
    if not mine.done():
        mine.set_result(None)
    if _tails.get(partition) is mine:
        del _tails[partition]


async def in_worker(func: Callable[..., Any], *args: Any) -> Any:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(_WORKERS, thread_name_prefix="produce-check")
    return await asyncio.get_running_loop().run_in_executor(_executor, func, *args)
