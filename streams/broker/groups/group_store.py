"""Group metadata that survives a broker restart, kept in ``__consumer_offsets`` beside the
committed offsets (Kafka keeps it there too, so generations and epochs never go back and a
member's generation- or epoch-fenced commits keep working after a coordinator restart).

* Classic groups: Kafka's GroupMetadataValue (key version 2, value version 3: protocol type,
  generation, protocol, leader, state timestamp, and each member's ids, timeouts, subscription
  and assignment), written when a generation becomes Stable (the leader's SyncGroup) and when
  the group becomes Empty; loaded back as a Stable (or Empty) group whose members carry on
  heartbeating in the same generation.
* KIP-848 consumer groups are written as Kafka's own record types (``consumer_records``);
  the JSON document under Kafka's ConsumerGroupMetadataKey (key version 3) that brokers before
  that wrote is still read here (``decode_consumer``), and rewritten as Kafka's records at
  start.
* KIP-932 share groups are written as Kafka's own record types (``share_records``); the JSON
  document under Kafka's ShareGroupMetadataKey (key version 11) that brokers before that wrote
  is still read here (``decode_share``), and rewritten as Kafka's records at start.
"""

from __future__ import annotations

import json
import re
import struct
import time
from typing import TYPE_CHECKING, Any

from .byte_reader import ByteReader
from .group import Group, GroupState
from .member import Member
from .offsets_codec import CorruptOffsetRecord

if TYPE_CHECKING:
    from .consumer import ConsumerGroup
    from .share import ShareGroup

GROUP_METADATA_VALUE_VERSION = 3


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def encode_classic(group: Group) -> bytes:
    """Kafka's GroupMetadataValue v3 for this generation."""
    out = [struct.pack(">h", GROUP_METADATA_VALUE_VERSION), _string(group.protocol_type or ""),
           struct.pack(">i", group.generation_id), _string(group.protocol_name),
           _string(group.leader_id), struct.pack(">q", int(time.time() * 1000)),
           struct.pack(">i", len(group.members))]
    for m in group.members.values():
        out += [_string(m.member_id), _string(m.group_instance_id), _string(m.client_id),
                _string(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms),
                _bytes(m.metadata_for(group.protocol_name)), _bytes(m.assignment)]
    return b"".join(out)


def decode_classic(group_id: str, data: bytes, now: float) -> Group:
    """The group as it was written; its members' sessions restart at ``now`` (loop clock)."""
    reader = ByteReader(data, CorruptOffsetRecord)
    version = reader.take(">h")
    if not 0 <= version <= 3:
        raise CorruptOffsetRecord(f"unknown group metadata version {version}")
    group = Group(group_id)
    group.protocol_type = reader.string() or None
    group.generation_id = reader.take(">i")
    group.protocol_name = reader.string()
    leader = reader.string()
    if version >= 2:
        reader.take(">q")  # current state timestamp
    for _ in range(reader.take(">i")):
        member_id = reader.string() or ""
        instance = reader.string() if version >= 3 else None
        client_id, client_host = reader.string() or "", reader.string() or ""
        rebalance = reader.take(">i") if version >= 1 else 0
        session = reader.take(">i")
        rebalance = rebalance or session
        subscription, assignment = reader.blob(), reader.blob()
        member = Member(member_id, instance, client_id, client_host, session, rebalance,
                        group.protocol_type or "", ((group.protocol_name or "", subscription),),
                        last_heartbeat=now, assignment=assignment)
        group.add(member)
    group.leader_id = leader if leader in group.members else group.leader_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    return group


def encode_consumer(group: ConsumerGroup) -> bytes:
    """The former JSON record of a KIP-848 group; no longer written by the broker, kept so the
    upgrade from it can be tested."""
    def parts(tps: Any) -> list[list[Any]]:
        return sorted([t, p] for t, p in tps)

    document = {
        "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
        "topic_sizes": group.topic_sizes, "empty_since_ms": group.empty_since_ms,
        "target": {mid: parts(tps) for mid, tps in group.target.items()},
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "rebalance_timeout_ms": m.rebalance_timeout_ms, "subscribed": sorted(m.subscribed),
            "regex": m.regex.pattern if m.regex else None, "server_assignor": m.server_assignor,
            "epoch": m.epoch, "previous_epoch": m.previous_epoch,
            "assigned": parts(m.assigned), "revoking": parts(m.revoking),
            "left_static": m.left_static,
            "classic": None if m.classic is None else {
                "session_timeout_ms": m.classic.session_timeout_ms,
                "protocols": [[name, meta.hex()] for name, meta in m.classic.protocols]},
        } for m in group.members.values()],
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def decode_consumer(group_id: str, data: bytes, now: float) -> ConsumerGroup:
    """The group as it was written; sessions (and revocation deadlines) restart at ``now``."""
    from .consumer import ClassicMembership, ConsumerGroup, ConsumerMember

    try:
        doc = json.loads(data)
        group = ConsumerGroup(group_id, doc["group_epoch"], doc["assignment_epoch"],
                              topic_sizes=dict(doc["topic_sizes"]),
                              empty_since_ms=doc["empty_since_ms"])
        group.target = {mid: {(t, p) for t, p in tps} for mid, tps in doc["target"].items()}
        for m in doc["members"]:
            classic = m["classic"]
            member = ConsumerMember(
                m["member_id"], m["instance_id"], m["rack_id"], m["client_id"],
                m["client_host"], m["rebalance_timeout_ms"], subscribed=set(m["subscribed"]),
                regex=re.compile(m["regex"]) if m["regex"] else None,
                server_assignor=m["server_assignor"], epoch=m["epoch"],
                previous_epoch=m["previous_epoch"],
                assigned={(t, p) for t, p in m["assigned"]},
                revoking={(t, p) for t, p in m["revoking"]}, last_heartbeat=now,
                left_static=m["left_static"],
                classic=None if classic is None else ClassicMembership(
                    classic["session_timeout_ms"],
                    tuple((name, bytes.fromhex(meta)) for name, meta in classic["protocols"]),
                    session_deadline=now + classic["session_timeout_ms"] / 1000))
            if member.revoking and member.classic is None:
                member.revoke_deadline = now + member.rebalance_timeout_ms / 1000
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static[member.instance_id] = member.member_id
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptOffsetRecord(f"unreadable consumer group record: {exc}") from None
    return group


def encode_share(group: ShareGroup) -> bytes:
    """The former JSON record of a share group's membership (the group epoch, each member's
    epoch and subscription, and the assignment); no longer written by the broker, kept so the
    upgrade from it can be tested."""
    document = {
        "epoch": group.epoch,
        "members": [{"member_id": m.member_id, "epoch": m.epoch,
                     "subscribed": sorted(m.subscribed), "client_id": m.client_id,
                     "client_host": m.client_host, "rack_id": m.rack_id}
                    for m in group.members.values()],
        "assignment": {mid: sorted([t, p] for t, p in tps)
                       for mid, tps in group.assignment.items()},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def decode_share(group_id: str, data: bytes, now: float) -> ShareGroup:
    """The share group as written; members' sessions restart at ``now``."""
    from .share import ShareGroup, ShareMember

    try:
        doc = json.loads(data)
        group = ShareGroup(group_id, doc["epoch"])
        for m in doc["members"]:
            group.members[m["member_id"]] = ShareMember(
                m["member_id"], m["epoch"], frozenset(m["subscribed"]), now, m["client_id"],
                m["client_host"], m["rack_id"])
        group.assignment = {mid: {(t, p) for t, p in tps}
                            for mid, tps in doc["assignment"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptOffsetRecord(f"unreadable share group record: {exc}") from None
    return group
