"""KIP-932 share-group APIs: ShareGroupHeartbeat, ShareFetch and ShareAcknowledge.

ShareFetch first applies the piggy-backed acknowledgements, then acquires records for the
member in every partition of its share session (long-polling up to MaxWaitMs when none are
available) and answers whole stored batches with the ``AcquiredRecords`` ranges the client
may deliver. Acknowledgements and released records are fsynced to ``__share_group_state``
before the answer.

Version 2 of ShareFetch and ShareAcknowledge (Kafka 4.2+, as 4.4 answers them):
``ShareAcquireMode`` record_limit (KIP-1206) makes MaxRecords a hard cap, splitting a stored
batch, where batch_optimized acquires whole batches; ``IsRenewAck`` with the RENEW
acknowledge type (KIP-1222) restarts the acquisition locks of records the member holds. A
ShareFetch carrying renewals acquires nothing and must ask for nothing (MaxWaitMs, MinBytes,
MaxBytes and MaxRecords all 0, else INVALID_REQUEST); a RENEW without IsRenewAck, or in v1, is
INVALID_REQUEST for its partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from ..groups import errors
from ..groups.protocols import GroupType
from ..groups.share import ShareGroupProtocol, ShareSession
from ..groups.share_partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRecord,
    SharePartition,
)
from ..protocol import ms
from ..records import iter_batches
from ..security.authorizer import DESCRIBE, GROUP, READ, TOPIC
from ..topics import TopicError
from . import handles
from .authorized import GROUP_OPERATIONS, NOT_REQUESTED

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker
    from ..storage.log import PartitionLog

GROUP_AUTHORIZATION_FAILED = 30
TOPIC_AUTHORIZATION_FAILED = 29
UNKNOWN_TOPIC_ID = 100
FINAL_EPOCH = -1
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # ShareFetch v2 ShareAcquireMode (KIP-1206)
_READ_LIMIT = 1 << 20
_NO_TOPIC = uuid.UUID(int=0)


def _protocol(broker: Broker) -> ShareGroupProtocol:
    protocol = broker.groups.protocol(GroupType.SHARE)
    assert isinstance(protocol, ShareGroupProtocol)
    return protocol


# -- ShareGroupHeartbeat ------------------------------------------------------------------------


@handles(76, 1, 1)
async def share_group_heartbeat(broker: Broker, ctx: RequestContext, request: Any
                                ) -> dict[str, Any]:
    fail = {"throttle_time": 0, "member_epoch": -1, "heartbeat_interval": 0}
    if not broker.security.allowed(ctx, READ, GROUP, request.group_id):
        return {**fail, "error_code": GROUP_AUTHORIZATION_FAILED}
    protocol = _protocol(broker)
    subscribed = request.subscribed_topic_names
    result = protocol.heartbeat(
        request.group_id, request.member_id, request.member_epoch,
        None if subscribed is None else [str(t) for t in subscribed],
        asyncio.get_running_loop().time(), ctx.client_id or "", ctx.client_host,
        request.rack_id,
    )
    if result.error:
        return {**fail, "error_code": result.error, "error_message": result.message}
    await protocol.persist(request.group_id, ())  # share-partitions initialized on assignment
    body: dict[str, Any] = {
        "throttle_time": 0, "error_code": 0, "member_id": result.member_id,
        "member_epoch": result.epoch, "heartbeat_interval": protocol.heartbeat_interval_ms(request.group_id),
    }
    if result.assignment is not None:
        body["assignment"] = {"topic_partitions": [
            {"topic_id": broker.topics.topics[name].topic_id, "partitions": parts}
            for name, parts in result.assignment.items()
        ]}
    return body


# -- ShareGroupDescribe -------------------------------------------------------------------------


@handles(77, 1, 1)
async def share_group_describe(broker: Broker, ctx: RequestContext, request: Any
                               ) -> dict[str, Any]:
    protocol = _protocol(broker)
    requested = bool(request.include_authorized_operations)
    described = []
    for group_id in request.group_ids:
        entry: dict[str, Any] = {"group_id": group_id, "error_code": 0, "group_state": "",
                                 "group_epoch": -1, "assignment_epoch": -1,
                                 "assignor_name": "", "members": [],
                                 "authorized_operations": NOT_REQUESTED}
        described.append(entry)
        if not broker.security.allowed(ctx, DESCRIBE, GROUP, group_id):
            entry["error_code"] = GROUP_AUTHORIZATION_FAILED
            continue
        group = protocol.groups.get(group_id)
        if group is None:
            entry["error_code"] = errors.GROUP_ID_NOT_FOUND
            other = broker.groups.group_type(group_id)
            entry["error_message"] = (f"Group {group_id} is not a share group."
                                      if other is not None else
                                      f"Group {group_id} not found.")
            continue
        members = []
        for member in sorted(group.members.values(), key=lambda m: m.member_id):
            members.append({
                "member_id": member.member_id, "rack_id": member.rack_id,
                "member_epoch": member.epoch, "client_id": member.client_id,
                "client_host": member.client_host,
                "subscribed_topic_names": sorted(member.subscribed),
                "assignment": {"topic_partitions": [
                    {"topic_id": broker.topics.topics[name].topic_id, "topic_name": name,
                     "partitions": parts}
                    for name, parts in protocol.assignment(group, member).items()]},
            })
        entry.update(
            group_state=group.state, group_epoch=group.epoch, assignment_epoch=group.epoch,
            assignor_name="simple", members=members,
            authorized_operations=broker.security.authorized_operations(
                ctx, GROUP, group_id, GROUP_OPERATIONS) if requested else NOT_REQUESTED)
    return {"throttle_time": 0, "groups": described}


# -- shared by ShareFetch and ShareAcknowledge --------------------------------------------------


def _topic_name(broker: Broker, topic_id: uuid.UUID | None) -> str | None:
    for topic in broker.topics.topics.values():
        if topic.topic_id == topic_id:
            return topic.name
    return None


def _session(protocol: ShareGroupProtocol, group_id: str, member_id: str, epoch: int
             ) -> tuple[int, ShareSession | None]:
    """Kafka's share-session epoch rules: 0 opens (replacing any), -1 is the final request,
    otherwise the epoch must be the one expected next."""
    group = protocol.groups[group_id]
    if epoch == 0:
        protocol.release(group_id, member_id)
        session = group.sessions[member_id] = ShareSession(1)
        return 0, session
    session = group.sessions.get(member_id)
    if session is None:
        return errors.SHARE_SESSION_NOT_FOUND, None
    if epoch == FINAL_EPOCH:
        return 0, session
    if epoch != session.next_epoch:
        return errors.INVALID_SHARE_SESSION_EPOCH, None
    session.next_epoch = epoch + 1 if epoch < (1 << 31) - 1 else 1
    return 0, session


def _ack_batches(batches: Any, renew: bool) -> list[AckBatch]:
    """The partition's acknowledgement batches; ValueError (INVALID_REQUEST, no message, as
    Kafka 4.4 checks them before the share-partition sees them) for an unknown type, a batch
    ending before it starts, a type count neither 1 nor the batch's length, or a batch
    starting before the previous one ended (touching it is allowed)."""
    allowed = (0, 1, 2, 3, 4) if renew else (0, 1, 2, 3)
    out: list[AckBatch] = []
    for b in batches:
        types = tuple(AcknowledgeType(int(t)) if int(t) in allowed else None
                      for t in b.acknowledge_types)
        if not types or None in types:
            raise ValueError("invalid acknowledge type")
        if b.last_offset < b.first_offset or len(types) not in (
                1, b.last_offset - b.first_offset + 1):
            raise ValueError("malformed acknowledgement batch")
        if out and b.first_offset < out[-1].last_offset:
            raise ValueError("acknowledgement batches out of order")
        out.append(AckBatch(b.first_offset, b.last_offset, types))  # type: ignore[arg-type]
    return out


def _acknowledge(protocol: ShareGroupProtocol, group_id: str, member_id: str, topic: str,
                 partition: int, batches: Any, renew: bool = False) -> tuple[int, str | None]:
    """Apply one partition's acknowledgements; ``renew``: RENEW is allowed (a v2 request
    with IsRenewAck set). Returns the error code and Kafka's message for it (or None)."""
    try:
        parsed = _ack_batches(batches, renew)
    except ValueError:
        return errors.INVALID_REQUEST, None
    try:
        part = protocol.share_partition(group_id, topic, partition)
    except TopicError as exc:
        return exc.code, None
    now_ms = int(asyncio.get_running_loop().time() * 1000)
    return part.acknowledge_explained(member_id, parsed, now_ms)


def _check_member(broker: Broker, ctx: RequestContext, protocol: ShareGroupProtocol,
                  group_id: str | None, member_id: str | None, epoch: int
                  ) -> tuple[int, str | None]:
    """Kafka 4.4 does not ask the group whether the member is in it: a share session is
    keyed by group and member id, and record locks keep members apart."""
    if not group_id or not member_id:
        return errors.INVALID_REQUEST, "GroupId and MemberId are required."
    if not broker.security.allowed(ctx, READ, GROUP, group_id):
        return GROUP_AUTHORIZATION_FAILED, None
    return 0, None


def _endpoints(broker: Broker, ctx: RequestContext) -> list[dict[str, Any]]:
    host, port = broker.advertised(ctx)
    return [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}]


def _partition_entry(index: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": 0, "acknowledge_error_code": 0,
            "current_leader": {"leader_id": -1, "leader_epoch": -1}, "records": b"",
            "acquired_records": []}


# -- ShareFetch ---------------------------------------------------------------------------------


@handles(78, 1, 2)
async def share_fetch(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    protocol = _protocol(broker)
    lock_ms = protocol.config_for(request.group_id or "").record_lock_duration_ms
    top = {"throttle_time": 0, "acquisition_lock_timeout": lock_ms, "responses": [],
           "node_endpoints": []}
    renew = bool(getattr(request, "is_renew_ack", False))
    mode = getattr(request, "share_acquire_mode", BATCH_OPTIMIZED)
    if renew and (request.max_bytes or request.min_bytes or request.max_records
                  or ms(request.max_wait)):
        # Kafka 4.4 logs "maxBytes must be set to 0, ... if isRenewAck is true." and answers
        # without a message.
        return {**top, "acquisition_lock_timeout": 0, "error_code": errors.INVALID_REQUEST}
    group_id, member_id = request.group_id, request.member_id
    error, message = _check_member(broker, ctx, protocol, group_id, member_id,
                                   request.share_session_epoch)
    if error:
        return {**top, "error_code": error, "error_message": message}
    if not protocol.has_group(group_id):
        return _no_share_group(broker, ctx, request, top)
    error, session = _session(protocol, group_id, member_id, request.share_session_epoch)
    if error or session is None:
        return {**top, "error_code": error}
    final = request.share_session_epoch == FINAL_EPOCH
    entries: dict[tuple[str, int], dict[str, Any]] = {}
    ids: dict[str, uuid.UUID] = {}
    touched: set[tuple[str, int]] = set()
    unknown: list[dict[str, Any]] = []
    for topic in request.topics:
        name = _topic_name(broker, topic.topic_id)
        if name is None:
            unknown.append({"topic_id": topic.topic_id or _NO_TOPIC, "partitions": [
                {**_partition_entry(p.partition_index), "error_code": UNKNOWN_TOPIC_ID}
                for p in topic.partitions]})
            continue
        ids[name] = topic.topic_id
        for p in topic.partitions:
            tp = (name, p.partition_index)
            if not final:
                session.partitions[tp] = topic.topic_id
            entry = entries[tp] = _partition_entry(p.partition_index)
            if not broker.security.allowed(ctx, READ, TOPIC, name):
                entry["error_code"] = TOPIC_AUTHORIZATION_FAILED
                continue
            if p.acknowledgement_batches:
                entry["acknowledge_error_code"], entry["acknowledge_error_message"] = (
                    _acknowledge(protocol, group_id, member_id, name, p.partition_index,
                                 p.acknowledgement_batches, renew))
                touched.add(tp)
            elif renew:  # a renewing fetch answers only the partitions it acknowledges in
                del entries[tp]
    for forgotten in request.forgotten_topics_data:
        name = _topic_name(broker, forgotten.topic_id)
        for index in forgotten.partitions:
            session.partitions.pop((name or "", index), None)
    if final:
        protocol.release(group_id, member_id)
        touched |= {tp for tp in session.partitions}
        protocol.groups[group_id].sessions.pop(member_id, None)
    elif mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        # Kafka 4.4 fails the acquisition ("Unknown share acquire mode id"), after the
        # session and the acknowledgements, with UNKNOWN_SERVER_ERROR.
        await protocol.persist(group_id, touched)
        return {**top, "acquisition_lock_timeout": 0, "error_code": errors.UNKNOWN_SERVER_ERROR}
    elif not renew:
        await _acquire_with_wait(broker, ctx, protocol, request, session, group_id,
                                 member_id, entries, ids, mode == RECORD_LIMIT)
    await protocol.persist(group_id, touched)
    responses: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (name, _index), entry in sorted(entries.items()):
        known = broker.topics.topics.get(name)
        topic_id = ids.get(name) or (known.topic_id if known is not None else None)
        if topic_id is not None:
            responses.setdefault(topic_id, []).append(entry)
    return {**top, "error_code": 0, "node_endpoints": _endpoints(broker, ctx),
            "responses": [{"topic_id": tid, "partitions": parts}
                          for tid, parts in responses.items()] + unknown}


def _no_share_group(broker: Broker, ctx: RequestContext, request: Any, top: dict[str, Any]
                    ) -> dict[str, Any]:
    """No share group of that id (none, or another type's): Kafka opens no session and
    answers each partition with the share coordinator's refusal to read uninitialized state."""
    if request.share_session_epoch != 0:
        return {**top, "error_code": errors.SHARE_SESSION_NOT_FOUND}
    message = "Read operation on uninitialized share partition not allowed."
    return {**top, "error_code": 0, "node_endpoints": _endpoints(broker, ctx), "responses": [
        {"topic_id": t.topic_id or _NO_TOPIC, "partitions": [
            {**_partition_entry(p.partition_index), "error_code": errors.UNKNOWN_SERVER_ERROR,
             "error_message": message} for p in t.partitions]}
        for t in request.topics]}


async def _acquire_with_wait(broker: Broker, ctx: RequestContext,
                             protocol: ShareGroupProtocol, request: Any,
                             session: ShareSession, group_id: str, member_id: str,
                             entries: dict[tuple[str, int], dict[str, Any]],
                             ids: dict[str, uuid.UUID], record_limit: bool) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms(request.max_wait) / 1000
    budget = max(1, request.max_records)
    committed_only = protocol.read_committed(group_id)
    while True:
        logs: list[PartitionLog] = []
        got = 0
        for tp in sorted(session.partitions):
            if budget - got <= 0:
                break
            name, index = tp
            if not broker.security.allowed(ctx, READ, TOPIC, name):
                continue
            known = broker.topics.topics.get(name)
            if known is None or known.topic_id != session.partitions[tp]:
                session.partitions.pop(tp, None)  # deleted (and maybe created again) meanwhile
                if tp in entries:
                    entries[tp]["error_code"] = UNKNOWN_TOPIC_ID
                continue
            try:
                plog = broker.topics.partition(name, index)
                part = protocol.share_partition(group_id, name, index)
            except TopicError as exc:
                session.partitions.pop(tp, None)
                if tp in entries:
                    entries[tp]["error_code"] = exc.code
                continue
            logs.append(plog)
            # share.isolation.level=read_committed: only up to the last stable offset, and
            # the records of aborted transactions are archived, never delivered (KIP-932).
            upper = plog.last_stable_offset if committed_only else plog.next_offset
            acquired = _acquire(part, plog, member_id, upper, int(loop.time() * 1000),
                                budget - got, committed_only, record_limit)
            if not acquired:
                continue
            got += len(acquired)
            entry = entries.setdefault(tp, _partition_entry(index))
            ids.setdefault(name, known.topic_id)
            entry["records"] = _read_batches(plog, acquired)
            entry["acquired_records"] = _ranges(acquired)
        remaining = deadline - loop.time()
        if got or remaining <= 0 or not logs:
            return
        waiters = []
        for plog in logs:
            waiter = loop.create_future()
            plog.data_waiters.append(waiter)
            waiters.append((plog, waiter))
        # Locks of other members may expire meanwhile: look again at least once a second.
        try:
            await asyncio.wait([w for _, w in waiters], timeout=min(remaining, 1.0),
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for plog, waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
                    with contextlib.suppress(ValueError):
                        plog.data_waiters.remove(waiter)


def _acquire(part: SharePartition, plog: PartitionLog, member_id: str, upper: int,
             now_ms: int, budget: int, committed_only: bool, record_limit: bool = False
             ) -> list[AcquiredRecord]:
    """Acquire about ``budget`` records below ``upper``: as Kafka, whole stored batches (a
    batch larger than what is left of the budget is acquired whole, so max.poll.records caps a
    fetch at batch boundaries; under ``record_limit`` it is split, never more than
    ``budget``), never past the offsets checked for markers and aborted records; window by
    window while windows turn out undeliverable."""
    out: list[AcquiredRecord] = []
    while len(out) < budget:
        first = part.end_offset
        stop = min(upper, first + budget - len(out))
        skip, batch_end = _undeliverable(plog, first, stop, committed_only)
        end = stop if record_limit else max(stop, min(upper, batch_end))
        out += part.acquire(member_id, end, now_ms, budget - len(out) + (end - stop),
                            undeliverable=skip)
        if part.end_offset == first or part.end_offset >= upper:
            break
    return out


def _undeliverable(plog: PartitionLog, start: int, stop: int, committed_only: bool
                   ) -> tuple[set[int], int]:
    """Offsets from ``start`` a share consumer never gets (transaction markers, and under
    read_committed the records of aborted transactions), in the stored batches that hold
    [start, stop); and the end of the last of those batches."""
    aborted = [t for t in plog.producer_state.aborted
               if t.last_offset >= start] if committed_only else []
    out: set[int] = set()
    offset = start
    while offset < stop:
        data = plog.read(offset, _READ_LIMIT, stop)
        if not data:
            break
        advanced = offset
        for _pos, header in iter_batches(data):
            if header.is_control or (header.is_transactional and any(
                    t.producer_id == header.producer_id
                    and t.first_offset <= header.base_offset <= t.last_offset
                    for t in aborted)):
                out.update(range(header.base_offset, header.last_offset + 1))
            advanced = header.last_offset + 1
        if advanced <= offset:
            break
        offset = advanced
    return out, offset


def _read_batches(plog: PartitionLog, acquired: list[AcquiredRecord]) -> bytes:
    """The stored batches holding the acquired offsets, each batch once, in offset order."""
    wanted = sorted(r.offset for r in acquired)
    chunks: list[bytes] = []
    covered = -1
    for offset in wanted:
        if offset <= covered:
            continue
        data = plog.read(offset, _READ_LIMIT, wanted[-1] + 1)
        for pos, header in iter_batches(data):
            if header.last_offset <= covered:
                continue
            if header.base_offset > wanted[-1]:
                break
            chunks.append(data[pos:pos + header.size])
            covered = header.last_offset
        if covered < offset:  # nothing readable there (deleted meanwhile)
            covered = offset
    return b"".join(chunks)


def _ranges(acquired: list[AcquiredRecord]) -> list[dict[str, int]]:
    """Contiguous offsets of equal delivery count, as ShareFetch's AcquiredRecords."""
    out: list[dict[str, int]] = []
    for rec in sorted(acquired, key=lambda r: r.offset):
        last = out[-1] if out else None
        if last and last["last_offset"] == rec.offset - 1 and (
                last["delivery_count"] == rec.delivery_count):
            last["last_offset"] = rec.offset
        else:
            out.append({"first_offset": rec.offset, "last_offset": rec.offset,
                        "delivery_count": rec.delivery_count})
    return out


# -- ShareAcknowledge ---------------------------------------------------------------------------


@handles(79, 1, 2)
async def share_acknowledge(broker: Broker, ctx: RequestContext, request: Any
                            ) -> dict[str, Any]:
    protocol = _protocol(broker)
    top = {"throttle_time": 0,
           "acquisition_lock_timeout": protocol.config_for(
               request.group_id or "").record_lock_duration_ms,
           "responses": [], "node_endpoints": []}
    group_id, member_id = request.group_id, request.member_id
    renew = bool(getattr(request, "is_renew_ack", False))
    error, message = _check_member(broker, ctx, protocol, group_id, member_id,
                                   request.share_session_epoch)
    if error:
        return {**top, "error_code": error, "error_message": message}
    if request.share_session_epoch == 0:  # acknowledging needs a session
        return {**top, "error_code": errors.INVALID_SHARE_SESSION_EPOCH}
    if not protocol.has_group(group_id):
        return {**top, "error_code": errors.SHARE_SESSION_NOT_FOUND}
    error, session = _session(protocol, group_id, member_id, request.share_session_epoch)
    if error or session is None:
        return {**top, "error_code": error}
    touched: set[tuple[str, int]] = set()
    responses = []
    for topic in request.topics:
        name = _topic_name(broker, topic.topic_id)
        parts = []
        for p in topic.partitions:
            entry = {"partition_index": p.partition_index, "error_code": 0,
                     "current_leader": {"leader_id": -1, "leader_epoch": -1}}
            if name is None:
                entry["error_code"] = UNKNOWN_TOPIC_ID
            elif not broker.security.allowed(ctx, READ, TOPIC, name):
                entry["error_code"] = TOPIC_AUTHORIZATION_FAILED
            else:
                entry["error_code"], entry["error_message"] = _acknowledge(
                    protocol, group_id, member_id, name, p.partition_index,
                    p.acknowledgement_batches, renew)
                touched.add((name, p.partition_index))
            parts.append(entry)
        responses.append({"topic_id": topic.topic_id or _NO_TOPIC, "partitions": parts})
    if request.share_session_epoch == FINAL_EPOCH:
        protocol.release(group_id, member_id)
        touched |= set(session.partitions)
        protocol.groups[group_id].sessions.pop(member_id, None)
    await protocol.persist(group_id, touched)
    return {**top, "error_code": 0, "responses": responses,
            "node_endpoints": _endpoints(broker, ctx)}
