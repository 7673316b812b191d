"""Reading what MirrorMaker 2 wrote, as Kafka's MirrorClient / RemoteClusterUtils do: the
translated offsets of a consumer group (from ``<source>.checkpoints.internal`` on the target),
for a consumer that fails over from the source cluster to the target."""

from __future__ import annotations

import time

from aiokafka.structs import TopicPartition

from connect.mirror.checkpoint import read_checkpoints
from connect.mirror.config import ClusterClients
from connect.mirror.formats import Checkpoint
from connect.mirror.policy import DefaultReplicationPolicy


async def remote_consumer_offsets(target: ClusterClients, policy: DefaultReplicationPolicy,
                                  source_alias: str, group: str, timeout: float = 60.0
                                  ) -> dict[TopicPartition, Checkpoint]:
    """The latest checkpoint of ``group`` per replica partition on ``target`` (Kafka's
    MirrorClient.remoteConsumerOffsets; ``.downstream_offset`` is where to resume)."""
    topic = policy.checkpoints_topic(source_alias)
    out: dict[TopicPartition, Checkpoint] = {}
    for checkpoint in await read_checkpoints(target, topic, time.monotonic() + timeout):
        if checkpoint.group == group:
            out[TopicPartition(checkpoint.topic, checkpoint.partition)] = checkpoint
    return out


async def translate_offsets(target: ClusterClients, policy: DefaultReplicationPolicy,
                            source_alias: str, group: str, timeout: float = 60.0
                            ) -> dict[TopicPartition, int]:
    """RemoteClusterUtils.translateOffsets: ``{replica partition: offset to resume at}``."""
    checkpoints = await remote_consumer_offsets(target, policy, source_alias, group, timeout)
    return {tp: c.downstream_offset for tp, c in checkpoints.items()}


__all__ = ["remote_consumer_offsets", "translate_offsets"]
