"""KIP-932 admin APIs on share-group offsets: DescribeShareGroupOffsets (90 v0-1),
AlterShareGroupOffsets (91 v0) and DeleteShareGroupOffsets (92 v0).

A share group's "offset" on a partition is its share-partition start offset. Answers follow
Apache Kafka 4.4 (checked by tests/reference/test_share_offsets_diff.py):

* describe never fails for an unknown group or another type's group (no topics), and reports
  -1 (start offset and lag) for a partition without state or not yet initialized;
* alter and delete need an empty share group (NON_EMPTY_GROUP), refuse another type's group
  (GROUP_ID_NOT_FOUND "Group X is not a share group.") and an empty id (INVALID_GROUP_ID);
  alter creates the share group when the id is unknown and stores the start offset as given;
* alter lists unknown topics first, delete lists the deleted topics first (each in request
  order), as Kafka's coordinator assembles its answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..groups import errors
from ..groups.protocols import GroupType
from ..groups.share import UNINITIALIZED, ShareGroupProtocol
from ..groups.share_state import ShareKey
from ..security.authorizer import DELETE, DESCRIBE, GROUP, READ, TOPIC
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

GROUP_AUTHORIZATION_FAILED = 30
TOPIC_AUTHORIZATION_FAILED = 29
NO_TOPIC_MESSAGE = "This server does not host this topic-partition."
NO_STATE_MESSAGE = "There is no offset information to delete."
NOT_EMPTY_MESSAGE = "The group is not empty."
INVALID_GROUP_MESSAGE = "The group id is invalid."


def _protocol(broker: Broker) -> ShareGroupProtocol:
    protocol = broker.groups.protocol(GroupType.SHARE)
    assert isinstance(protocol, ShareGroupProtocol)
    return protocol


def _partition_count(broker: Broker, name: str) -> int | None:
    topic = broker.topics.topics.get(name)
    return None if topic is None else len(topic.partitions)


# -- DescribeShareGroupOffsets ------------------------------------------------------------------


@handles(90, 0, 1)
async def describe_share_group_offsets(broker: Broker, ctx: RequestContext, request: Any
                                       ) -> dict[str, Any]:
    protocol = _protocol(broker)
    groups = []
    for group in request.groups:
        entry: dict[str, Any] = {"group_id": group.group_id, "topics": [], "error_code": 0}
        groups.append(entry)
        if not broker.security.allowed(ctx, DESCRIBE, GROUP, group.group_id):
            entry.update(error_code=GROUP_AUTHORIZATION_FAILED)
            continue
        if not group.group_id or not protocol.has_group(group.group_id):
            continue  # Kafka: no topics, no error (also for other types' groups)
        if group.topics is None:
            wanted: list[tuple[str, list[int]]] = []
            for key in protocol.state_keys(group.group_id):
                if wanted and wanted[-1][0] == key.topic:
                    wanted[-1][1].append(key.partition)
                else:
                    wanted.append((key.topic, [key.partition]))
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in group.topics]
        for name, partitions in wanted:
            topic = broker.topics.topics.get(name)
            allowed = broker.security.allowed(ctx, DESCRIBE, TOPIC, name)
            rows = []
            for index in partitions:
                start, lag = protocol.start_and_lag(ShareKey(group.group_id, name, index))
                row = {"partition_index": index, "start_offset": start, "leader_epoch": 0,
                       "lag": lag, "error_code": 0}
                if not allowed:
                    row.update(start_offset=UNINITIALIZED, lag=UNINITIALIZED,
                               error_code=TOPIC_AUTHORIZATION_FAILED)
                rows.append(row)
            entry["topics"].append({"topic_name": name,
                                    "topic_id": topic.topic_id if topic else None,
                                    "partitions": rows})
    return {"throttle_time": 0, "groups": groups}


# -- AlterShareGroupOffsets and DeleteShareGroupOffsets: the same group checks -------------------


def _group_refusal(broker: Broker, ctx: RequestContext, protocol: ShareGroupProtocol,
                   group_id: str, operation: int) -> tuple[int, str | None] | None:
    if not group_id:
        return errors.INVALID_GROUP_ID, INVALID_GROUP_MESSAGE
    if not broker.security.allowed(ctx, operation, GROUP, group_id):
        return GROUP_AUTHORIZATION_FAILED, None
    kind = broker.groups.group_type(group_id)
    if kind not in (None, GroupType.SHARE):
        return errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    if not protocol.is_empty(group_id):
        return errors.NON_EMPTY_GROUP, NOT_EMPTY_MESSAGE
    return None


@handles(91, 0, 0)
async def alter_share_group_offsets(broker: Broker, ctx: RequestContext, request: Any
                                    ) -> dict[str, Any]:
    protocol = _protocol(broker)
    group_id = request.group_id
    refused = _group_refusal(broker, ctx, protocol, group_id, READ)
    if refused is not None:
        return {"throttle_time": 0, "error_code": refused[0], "error_message": refused[1],
                "responses": []}
    if not broker.groups.claim_group_id(group_id, GroupType.SHARE):
        return {"throttle_time": 0, "error_code": errors.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {group_id} is not a share group.", "responses": []}
    protocol.ensure_group(group_id)
    unknown, known = [], []
    for topic in request.topics:
        count = _partition_count(broker, topic.topic_name)
        if count is None:
            unknown.append({"topic_name": topic.topic_name, "topic_id": None, "partitions": [
                {"partition_index": p.partition_index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                 "error_message": NO_TOPIC_MESSAGE} for p in topic.partitions]})
            continue
        allowed = broker.security.allowed(ctx, READ, TOPIC, topic.topic_name)
        rows = []
        for p in topic.partitions:
            row: dict[str, Any] = {"partition_index": p.partition_index, "error_code": 0}
            if not allowed:
                row["error_code"] = TOPIC_AUTHORIZATION_FAILED
            elif not 0 <= p.partition_index < count:
                row.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION,
                           error_message=NO_TOPIC_MESSAGE)
            else:
                await protocol.alter_start_offset(
                    ShareKey(group_id, topic.topic_name, p.partition_index), p.start_offset)
            rows.append(row)
        known.append({"topic_name": topic.topic_name,
                      "topic_id": broker.topics.topics[topic.topic_name].topic_id,
                      "partitions": rows})
    return {"throttle_time": 0, "error_code": 0, "responses": unknown + known}


@handles(92, 0, 0)
async def delete_share_group_offsets(broker: Broker, ctx: RequestContext, request: Any
                                     ) -> dict[str, Any]:
    protocol = _protocol(broker)
    group_id = request.group_id
    refused = _group_refusal(broker, ctx, protocol, group_id, DELETE)
    if refused is not None:
        return {"throttle_time": 0, "error_code": refused[0], "error_message": refused[1],
                "responses": []}
    with_state: dict[str, list[ShareKey]] = {}
    for key in protocol.state_keys(group_id):
        with_state.setdefault(key.topic, []).append(key)
    deleted, failed = [], []
    doomed: list[ShareKey] = []
    for topic in request.topics:
        name = topic.topic_name
        known = broker.topics.topics.get(name)
        if known is None:
            failed.append({"topic_name": name, "topic_id": None,
                           "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                           "error_message": NO_TOPIC_MESSAGE})
        elif not broker.security.allowed(ctx, READ, TOPIC, name):
            failed.append({"topic_name": name, "topic_id": known.topic_id,
                           "error_code": TOPIC_AUTHORIZATION_FAILED})
        elif name not in with_state:
            failed.append({"topic_name": name, "topic_id": None,
                           "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                           "error_message": NO_STATE_MESSAGE})
        else:
            doomed.extend(with_state.pop(name))
            deleted.append({"topic_name": name, "topic_id": known.topic_id, "error_code": 0})
    await protocol.delete_state(doomed)
    return {"throttle_time": 0, "error_code": 0, "responses": deleted + failed}
