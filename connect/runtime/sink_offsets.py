"""Sink connector offsets are the committed offsets of its consumer group ``connect-<name>``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiokafka.structs import TopicPartition

from connect.runtime import clients
from streams.kafka.admin import GROUP_ID_NOT_FOUND, delete_group

if TYPE_CHECKING:
    from connect.runtime.clients import Target


def group_id(connector: str) -> str:
    return f"connect-{connector}"


async def read(bootstrap: Target, connector: str) -> dict[TopicPartition, int]:
    admin = clients.admin(bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group_id(connector))
    finally:
        await admin.close()
    return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


async def _delete_group(bootstrap: Target, connector: str) -> None:
    admin = clients.admin(bootstrap)
    await admin.start()
    try:
        code = await delete_group(admin, group_id(connector))
        if code not in (0, GROUP_ID_NOT_FOUND):  # not found: nothing committed yet
            raise RuntimeError(f"could not delete consumer group {group_id(connector)}: "
                               f"error {code}")
    finally:
        await admin.close()


async def _commit(bootstrap: Target, connector: str, offsets: dict[TopicPartition, int]) -> None:
    if not offsets:
        return
    consumer = clients.consumer(bootstrap, None, group_id=group_id(connector))
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        await consumer.commit(dict(offsets))
    finally:
        await consumer.stop()


async def alter(bootstrap: Target, connector: str,
                changes: dict[TopicPartition, int | None]) -> None:
    """Set (int) or reset (None) partitions. The group has no members: the connector is STOPPED."""
    if any(v is None for v in changes.values()):
        current = await read(bootstrap, connector)
        keep = {tp: o for tp, o in current.items() if tp not in changes}
        keep.update({tp: o for tp, o in changes.items() if o is not None})
        await _delete_group(bootstrap, connector)
        await _commit(bootstrap, connector, keep)
    else:
        await _commit(bootstrap, connector, {tp: int(o) for tp, o in changes.items()})


async def reset(bootstrap: Target, connector: str) -> None:
    await _delete_group(bootstrap, connector)
