"""MirrorMaker 2 on our Connect runtime: Kafka's three connectors (``MirrorSourceConnector``,
``MirrorCheckpointConnector``, ``MirrorHeartbeatConnector``) with Kafka's record formats and
topic names, the ``streams mirror`` driver (as ``connect-mirror-maker.sh``) and offset
translation for fail-over (as ``RemoteClusterUtils.translateOffsets``)."""

from __future__ import annotations

from connect.mirror.formats import Checkpoint, Heartbeat, OffsetSync
from connect.mirror.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

__all__ = ["Checkpoint", "DefaultReplicationPolicy", "Heartbeat", "IdentityReplicationPolicy",
           "OffsetSync"]
