"""Every use of aiokafka's private internals, in one module (written against aiokafka 0.14.0,
which pyproject pins; ``tests/unit/test_kafka_internals.py`` checks the contract).

aiokafka has no public API for a few things a Kafka Streams runtime needs:
- the consumer's group metadata (generation, member id), which KIP-447 fencing sends with
  every transactional offset commit (Kafka's ``KafkaConsumer.groupMetadata()``);
- TxnOffsetCommit v3+, which carries that metadata (aiokafka only sends v0, which the group
  coordinator cannot check);
- OffsetFetch with ``require_stable`` (v7+, KIP-447), which a read_committed consumer sends so
  it never starts from offsets that an open transaction is about to replace;
- a partition's fetch position without an await, and the client behind a consumer;
- a group member's forced rejoin (Kafka's ``enforceRebalance``; Connect's leader uses it too),
  and one JoinGroup per (re)join of a member offering several protocols, as Kafka's clients
  send (aiokafka 0.14.0 sends one per assignor; installed on import, see
  ``_group_join_with_every_protocol``);
- cluster metadata on demand: a refresh now, and every topic with its partitions (Connect's
  config/offset/status logs and the Spark source's planning);
- a raw request through an admin client, for admin calls aiokafka lacks (DeleteGroups), and
  through a network client: Metadata that may create a topic (``topic_metadata``), EndTxn for a
  transaction another process began (``end_transaction``; the Spark sink);
- a client stopped all the way when aiokafka's own stop is cut short (``stop_client``);
- a read_committed consumer's high watermarks (its ``end_offsets`` gives the last stable offset),
  which a changelog restore under exactly-once must reach (see ``high_watermarks``), and end
  offsets asked on another client's connection, not behind a consumer's waiting fetch
  (``list_end_offsets``);
- Kafka's ``delivery.timeout.ms`` (KIP-91): aiokafka gives up on a batch once it is older than
  ``request.timeout.ms`` (its accumulator's batch TTL), see ``set_delivery_timeout``;
- the at_least_once membership lease (lease.py): the consumer's membership answers are noted
  and every ProduceRequest is checked against the lease in the same step as it is written to
  the socket (``guard_produce_with_membership``).
Everything else uses aiokafka's public API.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import errors as Errors
from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.cluster import ClusterMetadata
from aiokafka.consumer.group_coordinator import CoordinatorGroupRebalance
from aiokafka.producer.sender import TxnOffsetCommitHandler
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.offset import OffsetRequest
from aiokafka.protocol.produce import ProduceRequest
from aiokafka.protocol.transaction import EndTxnRequest
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

from .lease import REBALANCE_IN_PROGRESS, MembershipLease
from .lease import clock as lease_clock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aiokafka.admin import AIOKafkaAdminClient

log = logging.getLogger(__name__)

# Kafka's error codes for a member the group no longer knows (protocol guide, "Error Codes").
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88

COORDINATOR_WAIT_S = 10.0  # check_membership: how long to look for a lost group coordinator


class FencedByGroupError(Errors.KafkaError):
    """The group coordinator refused a transactional offset commit from an old generation or a
    removed member (KIP-447): this instance is a zombie and must abort and rejoin."""

    retriable = False


class MembershipLostError(FencedByGroupError):
    """A produce request was held because the membership lease had run out, and the group
    coordinator said this member or its generation is gone: the request was never sent (its
    batches fail with this error). Like a refused commit, it means "tasks migrated"."""


class MembershipUnconfirmedError(FencedByGroupError):
    """A produce request was held because the membership lease had run out, and it could not
    be renewed yet (no group coordinator, a lost connection): the request was not sent and its
    batches are offered again (retriable) until ``delivery.timeout.ms``; a batch that runs out
    fails with this error, which also means "tasks migrated", never a production failure."""

    retriable = True


class UnstableOffsetCommitError(Errors.KafkaError):
    """A transaction holding offsets for the partition is still open (KIP-447): ask again."""

    retriable = True


@dataclass(frozen=True)
class GroupMetadata:
    """Kafka's ``ConsumerGroupMetadata``: what the group coordinator checks a commit against."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


def group_metadata(consumer: AIOKafkaConsumer, group_id: str) -> GroupMetadata:
    """The consumer's current generation and member id (-1 and "" before it joined)."""
    coordinator = consumer._coordinator  # noqa: SLF001
    if coordinator is None:
        return GroupMetadata(group_id, -1, "")
    return GroupMetadata(group_id, coordinator.generation, coordinator.member_id or "")


def fetch_position(consumer: AIOKafkaConsumer, tp: TopicPartition) -> int | None:
    """The consumer's fetch position without an await (aiokafka keeps it in its state)."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(tp)  # noqa: SLF001
    except AttributeError:
        return None
    if state is None or not state.has_valid_position:
        return None
    return state.position


def group_generation(consumer: Any) -> int:
    """The generation of the group this consumer last joined (-1 before a join, or after the
    coordinator forgot the member)."""
    return int(getattr(consumer._coordinator, "generation", -1))  # noqa: SLF001


def member_id(consumer: Any) -> str:
    """The member id the group gave this consumer ("" before a join, or once the coordinator
    forgot the member: aiokafka's reset_generation)."""
    return str(getattr(consumer._coordinator, "member_id", "") or "")  # noqa: SLF001


def client_of(client: AIOKafkaConsumer | AIOKafkaProducer) -> AIOKafkaClient:
    """The network client behind a consumer or producer (metadata, raw requests)."""
    if isinstance(client, AIOKafkaProducer):
        return client.client  # public on the producer
    return client._client  # noqa: SLF001


def security_protocol(client: Any) -> str:
    """The security.protocol an aiokafka consumer, producer or admin client connects with."""
    network = getattr(client, "_client", None) or client.client  # the producer's is public
    return str(network._security_protocol)  # noqa: SLF001


def set_delivery_timeout(producer: AIOKafkaProducer, delivery_timeout_ms: int) -> None:
    """Make ``producer`` keep retrying a batch for ``delivery.timeout.ms`` after it was handed
    over, as Kafka's producer does (KIP-91), instead of ``request.timeout.ms``.

    aiokafka fails a batch whose partition has had no leader for longer than its accumulator's
    batch TTL, and does not retry a failed produce request of a non-idempotent producer past
    that TTL; the TTL is ``request.timeout.ms`` (40 s), so a cluster that elects leaders again
    after 40 s lost the batch. Kafka's producer keeps it until ``delivery.timeout.ms``
    (default 120 s) has passed since ``send()``. Set before the first batch is created."""
    producer._message_accumulator._batch_ttl = delivery_timeout_ms / 1000  # noqa: SLF001
    producer._streams_delivery_timeout_ms = delivery_timeout_ms  # type: ignore[attr-defined]  # noqa: SLF001


def delivery_timeout_ms(producer: Any) -> int | None:
    """The ``delivery.timeout.ms`` given to ``set_delivery_timeout``, None if never set."""
    return getattr(producer, "_streams_delivery_timeout_ms", None)


def producer_transaction(producer: AIOKafkaProducer) -> tuple[str, int, int]:
    """(transactional id, producer id, epoch) of a transactional producer: what another process
    needs to commit or abort the transaction it has open (EndTxn)."""
    txn = producer._txn_manager  # noqa: SLF001
    if txn is None or txn.transactional_id is None:
        raise ValueError("the producer is not transactional")
    return txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch)


def request_rejoin(consumer: Any) -> None:
    """Make a group member rejoin at its next poll (Kafka's ``enforceRebalance``)."""
    consumer._coordinator.request_rejoin()  # noqa: SLF001


class _NotSent(SimpleNamespace):
    """The answer to a JoinGroup that ``_group_join_with_every_protocol`` held back."""


# aiokafka's own (``__wrapped__`` if this module was loaded twice and installed already).
_aiokafka_group_join = getattr(CoordinatorGroupRebalance.perform_group_join, "__wrapped__",
                               CoordinatorGroupRebalance.perform_group_join)


async def _group_join_with_every_protocol(rebalance: Any) -> Any:
    """aiokafka's group join, but only JoinGroups naming every protocol of the member go out.

    aiokafka 0.14.0 sends a JoinGroup after adding each assignor's protocol to the list (the
    send sits inside its loop over the assignors: aio-libs/aiokafka#1168), so a member with
    three assignors joins three times with three different protocol lists. A coordinator
    starts a new rebalance whenever a member's protocols change (Kafka's GroupCoordinator does,
    and so does ours), so every (re)join of such a member costs three generations, and two
    members whose join sequences get one step apart chase each other for ever: each one's next
    JoinGroup makes the group rebalance just after the other synced (a Connect worker restarted
    while the group waited for its killed predecessor's session to end never got an
    assignment; 1,350 JoinGroups in 5 minutes). The shorter lists are answered here without
    being sent; the last one, naming every protocol, is the member's one JoinGroup, as the
    Kafka protocol specifies (a JoinGroup carries all the member's protocols)."""
    protocols = len(rebalance._assignors)  # noqa: SLF001
    coordinator = rebalance._coordinator  # noqa: SLF001
    if protocols < 2:
        return await _aiokafka_group_join(rebalance)
    send = coordinator._send_req  # noqa: SLF001

    async def send_complete_joins(request: Any) -> Any:
        if isinstance(request, JoinGroupRequest) and \
                len(request._group_protocols) < protocols:  # noqa: SLF001
            return _NotSent(error_code=0)
        return await send(request)

    coordinator._send_req = send_complete_joins  # noqa: SLF001
    try:
        return await _aiokafka_group_join(rebalance)
    finally:
        del coordinator._send_req  # noqa: SLF001  (the class's method again)


# Installed for every aiokafka consumer of the process: one with a single assignor goes
# straight to aiokafka's own join.
_group_join_with_every_protocol.__wrapped__ = _aiokafka_group_join  # type: ignore[attr-defined]
CoordinatorGroupRebalance.perform_group_join = _group_join_with_every_protocol  # type: ignore[method-assign]


_CONN_ARGS = ("ssl_context", "security_protocol", "sasl_mechanism", "sasl_plain_username",
              "sasl_plain_password", "sasl_kerberos_service_name", "sasl_kerberos_domain_name")


async def connection_failure(kwargs: dict[str, Any], timeout: float = 10.0) -> str | None:
    """Why the first bootstrap server refuses a client built from ``kwargs`` (a refused SASL
    login, an untrusted certificate), or None if a connection succeeds. aiokafka only logs that
    reason and raises "Unable to bootstrap"; this opens one connection the same way to ask."""
    from aiokafka.conn import create_conn

    servers = kwargs.get("bootstrap_servers") or ""
    first = (servers if isinstance(servers, str) else servers[0]).split(",")[0].strip()
    host, _, port = first.rpartition(":")
    try:
        conn = await asyncio.wait_for(create_conn(
            host, int(port), request_timeout_ms=int(timeout * 1000),
            **{k: kwargs[k] for k in _CONN_ARGS if k in kwargs}), timeout)
    except (OSError, ValueError, Errors.KafkaError, TimeoutError) as exc:
        return str(exc) or type(exc).__name__
    conn.close()
    return None


async def wait_on_metadata(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    """The partitions of ``topic``, waiting for its metadata (auto-created topics appear late)."""
    return await client_of(consumer)._wait_on_metadata(topic)  # noqa: SLF001


async def refresh_metadata(client: AIOKafkaConsumer | AIOKafkaProducer) -> bool:
    """Fetch cluster metadata now and wait for it (True if it was updated). A consumer that
    assigns partitions by hand never subscribes, so nothing else makes aiokafka learn a topic
    that was created after the consumer started."""
    return bool(await client_of(client).force_metadata_update())


async def cluster_metadata(client: AIOKafkaConsumer | AIOKafkaProducer) -> ClusterMetadata:
    """Metadata of every topic with its partitions, from one Metadata request for all topics
    (the public ``consumer.topics()`` drops the partitions). Asking for all topics never
    auto-creates one."""
    return await client_of(client).fetch_all_metadata()


async def stop_client(client: AIOKafkaConsumer | AIOKafkaProducer) -> None:
    """Stop an aiokafka consumer or producer all the way, never raising but for our own
    cancellation.

    aiokafka's ``stop()`` awaits tasks it has just cancelled and can raise their
    CancelledError part way through (seen in the consumer's fetcher during a broker restart);
    what comes after it is skipped, and a half-stopped client lives on: a consumer still in
    the group, heartbeating as a member that never polls, holding its tasks until
    max.poll.interval.ms (5 minutes); a producer retrying its batches forever. When that
    happens, close the network client behind it too, which ends its connections.
    """
    name = type(client).__name__
    try:
        await client.stop()
        return
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # we are being cancelled, not just a client's inner task
        log.info("stopping the %s was cut short inside aiokafka (%r): closing its connections",
                 name, exc)
    except Exception as exc:
        log.info("stopping the %s failed (%r): closing its connections", name, exc)
    try:
        await client_of(client).close()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    except Exception as exc:
        log.debug("closing the %s's connections failed: %r", name, exc)


async def high_watermarks(consumer: AIOKafkaConsumer,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The partitions' end offsets as read_uncommitted sees them (ListOffsets with isolation
    level 0), whatever the consumer's own isolation level.

    Why: a read_committed consumer's ``end_offsets`` is the last stable offset, which stops
    before any transaction still open. A previous owner's transaction that already holds the
    group's offsets (its TxnOffsetCommit went through before it was paused) commits later; a
    restore that ended at the LSO would then miss state that the committed input offsets say
    was processed. Restoring read_committed up to the high watermark waits for every such
    transaction to end, committed or aborted.
    """
    return await list_end_offsets(client_of(consumer), partitions, isolation_level=0)


async def list_end_offsets(client: AIOKafkaClient, partitions: list[TopicPartition],
                           isolation_level: int) -> dict[TopicPartition, int]:
    """The partitions' end offsets (ListOffsets, latest) through ``client``: isolation level 0
    gives the high watermark, 1 the last stable offset (what a read_committed consumer's
    ``end_offsets`` gives).

    Why not the consumer's own ``end_offsets``: a consumer at the end of its partitions has a
    fetch waiting at the broker for up to ``fetch.max.wait.ms``, and the broker answers a
    connection's requests in order, so a ListOffsets sent behind it waits for that fetch too.
    Kafka's ``KafkaBasedLog.readEndOffsets`` asks an admin client instead, for this reason.
    """
    by_node: dict[int, dict[str, list[tuple[int, int]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for tp in partitions:
        node = client.cluster.leader_for_partition(tp)
        if node is None or node < 0:
            await client.force_metadata_update()
            node = client.cluster.leader_for_partition(tp)
            if node is None or node < 0:
                raise Errors.LeaderNotAvailableError(f"no leader for {tp}")
        by_node[node][tp.topic].append((tp.partition, -1))  # -1: the latest offset
    result: dict[TopicPartition, int] = {}
    for node, topics in by_node.items():
        response = await client.send(node, OffsetRequest(-1, isolation_level, list(topics.items())))
        for topic, parts in response.topics:
            for partition, error_code, *info in parts:
                error = Errors.for_code(error_code)
                if error is not Errors.NoError:
                    raise error(f"ListOffsets for {topic}-{partition}")
                result[TopicPartition(topic, partition)] = info[-1]
    return result


async def send_to_any(admin: AIOKafkaAdminClient, request: Request) -> Any:
    """Send one request to any broker through an admin client (the requests the cluster as a
    whole answers: ACLs, SCRAM credentials)."""
    return await admin._send_request(request)  # noqa: SLF001


async def send_to_node(admin: AIOKafkaAdminClient, node_id: int, request: Request) -> Any:
    """Send one request to one broker through an admin client and return its response, for the
    admin calls aiokafka lacks (DeleteGroups). Waits for the connection as the admin's own
    calls do."""
    return await admin._send_request_to_node(node_id, request)  # noqa: SLF001


async def send_to_any_broker(client: AIOKafkaClient, request: Request) -> Any:
    """One request to any broker through a network client (``client_of`` a producer, or
    ``streams.kafka.clients.network_client``)."""
    return await client.send(client.get_random_node(), request)


async def send_to_transaction_coordinator(client: AIOKafkaClient, transactional_id: str,
                                          request: Request) -> Any:
    """One request to the transaction coordinator of ``transactional_id``, on the coordination
    connection as aiokafka's producer sends its own (EndTxn for another process's transaction)."""
    node = await client.coordinator_lookup(CoordinationType.TRANSACTION, transactional_id)
    return await client.send(node, request, group=ConnectionGroup.COORDINATION)


async def topic_metadata(client: AIOKafkaClient, topic: str) -> tuple[int, int]:
    """(error code, partition count) of ``topic`` from one Metadata request that allows
    auto-creation, as a producer asks: a broker that creates topics creates it (LEADER_NOT_AVAILABLE
    until it has leaders), one that does not answers UNKNOWN_TOPIC_OR_PARTITION."""
    response = await send_to_any_broker(
        client, MetadataRequest([topic], allow_auto_topic_creation=True))
    for entry in response.topics:
        code, name, partitions = entry[0], entry[1], entry[3]
        if name == topic:
            return int(code), len(partitions)
    return Errors.LeaderNotAvailableError.errno, 0  # not in the answer (yet): ask again


async def end_transaction(client: AIOKafkaClient, transactional_id: str, producer_id: int,
                          epoch: int, commit: bool) -> int:
    """EndTxn for a transaction another process began (Kafka's transaction coordinator knows a
    transaction by id, producer id and epoch, not by connection): its error code."""
    response = await send_to_transaction_coordinator(
        client, transactional_id, EndTxnRequest(transactional_id, producer_id, epoch, commit))
    return int(response.error_code)


async def check_membership(consumer: AIOKafkaConsumer, group: GroupMetadata) -> None:
    """Ask the group coordinator whether ``group``'s generation and member id are still
    current (a Heartbeat), raising ``FencedByGroupError`` if they are not.

    at_least_once has no transactions to fence a zombie: an instance that was paused past its
    session timeout would write stale state over its successor's. The membership lease
    renews itself with this check once it has run out (``guard_produce_with_membership``),
    and the stream thread asks it after its loop stood still. REBALANCE_IN_PROGRESS means
    the member is still known (commits of the current generation are allowed while a
    rebalance prepares)."""
    coordinator = consumer._coordinator  # noqa: SLF001
    if coordinator is None:
        raise FencedByGroupError(f"the consumer of {group.group_id} has no group coordinator")
    if coordinator.coordinator_id is None:  # e.g. the broker was away: find it again first
        try:
            await asyncio.wait_for(coordinator.ensure_coordinator_known(), COORDINATOR_WAIT_S)
        except TimeoutError:
            raise Errors.KafkaTimeoutError(
                f"no group coordinator for {group.group_id} within {COORDINATOR_WAIT_S:.0f} s"
            ) from None
    resp = await client_of(consumer).send(
        coordinator.coordinator_id,
        HeartbeatRequest(group.group_id, group.generation_id, group.member_id),
        group=ConnectionGroup.COORDINATION)
    if resp.error_code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID):
        raise FencedByGroupError(
            f"generation {group.generation_id} of member {group.member_id!r} is no longer "
            f"current (Heartbeat error {resp.error_code})")


# -- TxnOffsetCommit v3 (KIP-447) ---------------------------------------------------------------

class _TxnOffsetCommitResponseV3(Response):
    API_KEY = 28
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("error_code", Int16),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class _TxnOffsetCommitRequestV3(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 28
    API_VERSION = 3
    RESPONSE_TYPE = _TxnOffsetCommitResponseV3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("group_id", CompactString("utf-8")),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("committed_offset", Int64),
                ("committed_leader_epoch", Int32),
                ("committed_metadata", CompactString("utf-8")),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields))


class _TxnOffsetCommitV3(Request[_TxnOffsetCommitRequestV3]):
    """Only v3: a broker without it cannot fence zombies, and we refuse to pretend."""

    API_KEY = 28

    def __init__(self, fields: tuple[Any, ...]) -> None:
        self._fields = fields

    def build(self, request_struct_class: type[_TxnOffsetCommitRequestV3]
              ) -> _TxnOffsetCommitRequestV3:
        return request_struct_class(*self._fields)


class _FencedTxnOffsetCommitHandler(TxnOffsetCommitHandler):
    """aiokafka's handler, sending v3 with the consumer's group metadata."""

    def __init__(self, sender: Any, offsets: Any, metadata: GroupMetadata) -> None:
        super().__init__(sender, offsets, metadata.group_id)
        self._metadata = metadata

    def create_request(self) -> _TxnOffsetCommitV3:
        txn = self._sender._txn_manager  # noqa: SLF001
        by_topic: dict[str, list[Any]] = collections.defaultdict(list)
        for tp, offset in sorted(self._offsets.items()):
            by_topic[tp.topic].append((tp.partition, offset.offset, -1, offset.metadata, {}))
        meta = self._metadata
        return _TxnOffsetCommitV3((
            txn.transactional_id, meta.group_id, txn.producer_id, txn.producer_epoch,
            meta.generation_id, meta.member_id, meta.group_instance_id,
            [(topic, parts, {}) for topic, parts in by_topic.items()], {}))

    def handle_response(self, resp: Any) -> Any:
        txn = self._sender._txn_manager  # noqa: SLF001
        for topic, partitions, _ in resp.topics:
            for partition, error_code, _ in partitions:
                if error_code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID):
                    # Abortable, as in Kafka's TransactionManager: the open transaction is
                    # aborted and the consumer rejoins. The caller gets the error through
                    # send_offsets; the futures aiokafka keeps for it are marked retrieved.
                    for *_, future in txn._pending_txn_offsets:  # noqa: SLF001
                        future.add_done_callback(_retrieve_exception)
                    txn._transaction_waiter.add_done_callback(  # noqa: SLF001
                        _retrieve_exception)
                    txn.error_transaction(FencedByGroupError(
                        f"TxnOffsetCommit for {topic}-{partition} refused (error "
                        f"{error_code}): generation {self._metadata.generation_id} of "
                        f"member {self._metadata.member_id!r} is no longer current"))
                    return None
        v0_shape = SimpleNamespace(errors=[
            (topic, [(partition, code) for partition, code, _ in partitions])
            for topic, partitions, _ in resp.topics])
        return super().handle_response(v0_shape)


def _retrieve_exception(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class GroupFencedOffsets:
    """Makes one transactional producer send its offsets with TxnOffsetCommit v3.

    ``send_offsets`` replaces ``producer.send_offsets_to_transaction(offsets, group_id)``: it
    takes the consumer's group metadata as of the moment the offsets were taken, so a
    coordinator that has moved to a newer generation refuses them (KIP-447)."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.producer = producer
        self._metadata: GroupMetadata | None = None
        sender = producer._sender  # noqa: SLF001
        self._sender = sender
        sender._do_txn_offset_commit = self._do_txn_offset_commit  # noqa: SLF001

    async def send_offsets(self, offsets: dict[TopicPartition, int] |
                           dict[TopicPartition, tuple[int, str]],
                           metadata: GroupMetadata) -> None:
        """``offsets``: per partition the next offset, or (offset, metadata string)."""
        self._metadata = metadata
        try:
            await self.producer.send_offsets_to_transaction(offsets, metadata.group_id)
        finally:
            self._metadata = None

    async def _do_txn_offset_commit(self, offsets: Any, group_id: str) -> None:
        if not offsets:
            return
        metadata = self._metadata
        if metadata is None or metadata.group_id != group_id:
            raise RuntimeError("transactional offsets sent without group metadata")
        sender = self._sender
        try:
            node_id = await sender._find_coordinator(  # noqa: SLF001
                CoordinationType.GROUP, group_id)
        except Errors.GroupAuthorizationFailedError as exc:
            sender._txn_manager.error_transaction(exc)  # noqa: SLF001
            return
        await _FencedTxnOffsetCommitHandler(sender, offsets, metadata).do(node_id)


# -- OffsetFetch v7 with require_stable (KIP-447) -----------------------------------------------

class _OffsetFetchResponseV7(Response):
    API_KEY = 9
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("committed_offset", Int64),
                ("committed_leader_epoch", Int32),
                ("metadata", CompactString("utf-8")),
                ("error_code", Int16),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("error_code", Int16),
        ("tags", TaggedFields))


class _OffsetFetchRequestV7(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 7
    RESPONSE_TYPE = _OffsetFetchResponseV7
    SCHEMA = Schema(
        ("group_id", CompactString("utf-8")),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_indexes", CompactArray(Int32)),
            ("tags", TaggedFields))),
        ("require_stable", Boolean),
        ("tags", TaggedFields))


class _StableOffsetFetch(Request[_OffsetFetchRequestV7]):
    API_KEY = 9

    def __init__(self, group_id: str, partitions: dict[str, list[int]]) -> None:
        self._group_id = group_id
        self._partitions = partitions

    def build(self, request_struct_class: type[_OffsetFetchRequestV7]) -> _OffsetFetchRequestV7:
        topics = [(topic, sorted(parts), {}) for topic, parts in sorted(self._partitions.items())]
        return request_struct_class(self._group_id, topics, True, {})


async def fetch_stable_offsets(consumer: AIOKafkaConsumer, group_id: str,
                               partitions: list[TopicPartition], timeout_s: float
                               ) -> dict[TopicPartition, int]:
    """The committed offsets of ``partitions``, waiting while a transaction that holds offsets
    for them is still open (KIP-447's ``require_stable``). Partitions with no committed offset
    are left out. Raises ``UnstableOffsetCommitError`` if they stay unstable past ``timeout_s``
    (the transaction timeout bounds how long a zombie's open transaction can last)."""
    committed = await fetch_stable_committed(consumer, group_id, partitions, timeout_s)
    return {tp: offset for tp, (offset, _metadata) in committed.items()}


async def fetch_stable_committed(consumer: AIOKafkaConsumer, group_id: str,
                                 partitions: list[TopicPartition], timeout_s: float
                                 ) -> dict[TopicPartition, tuple[int, str]]:
    """As ``fetch_stable_offsets``, with each offset's committed metadata string."""
    if not partitions:
        return {}
    coordinator = consumer._coordinator  # noqa: SLF001
    wanted: dict[str, list[int]] = collections.defaultdict(list)
    for tp in partitions:
        wanted[tp.topic].append(tp.partition)
    deadline = time.monotonic() + timeout_s
    backoff = 0.05
    while True:
        await coordinator.ensure_coordinator_known()
        try:
            resp = await client_of(consumer).send(
                coordinator.coordinator_id, _StableOffsetFetch(group_id, wanted),
                group=ConnectionGroup.COORDINATION)
            return _stable_offsets(resp)
        except Errors.KafkaError as exc:
            if not getattr(exc, "retriable", False) or time.monotonic() > deadline:
                raise
            if isinstance(exc, Errors.NotCoordinatorForGroupError
                          | Errors.GroupCoordinatorNotAvailableError
                          | Errors.KafkaConnectionError):
                coordinator.coordinator_dead()
            log.debug("committed offsets of %s not stable yet: %r", group_id, exc)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)


def _stable_offsets(resp: Any) -> dict[TopicPartition, tuple[int, str]]:
    if resp.error_code:
        raise Errors.for_code(resp.error_code)()
    result: dict[TopicPartition, tuple[int, str]] = {}
    for topic, partitions, _ in resp.topics:
        for partition, offset, _epoch, metadata, error_code, _ in partitions:
            if error_code == UNSTABLE_OFFSET_COMMIT:
                raise UnstableOffsetCommitError(f"{topic}-{partition}")
            if error_code:
                raise Errors.for_code(error_code)()
            if offset >= 0:
                result[TopicPartition(topic, partition)] = (offset, metadata or "")
    return result


__all__ = [
    "FencedByGroupError", "GroupFencedOffsets", "GroupMetadata", "MembershipLease",
    "MembershipLostError", "MembershipUnconfirmedError", "UnstableOffsetCommitError",
    "check_membership", "guard_produce_with_membership", "rebalance_timeout_ms", "client_of", "cluster_metadata", "end_transaction", "fetch_position",
    "fetch_stable_committed", "fetch_stable_offsets", "group_metadata", "refresh_metadata",
    "request_rejoin", "security_protocol", "send_to_any", "send_to_node", "topic_metadata",
    "wait_on_metadata",
]


async def close_producer(producer: AIOKafkaProducer, timeout_s: float) -> bool:
    """Kafka's ``producer.close(timeout)``: wait up to ``timeout_s`` for the pending batches,
    then fail what is still undelivered and close. True if everything was delivered.

    aiokafka's ``stop()`` waits for every pending batch without a bound, and a batch lives for
    the producer's ``delivery.timeout.ms`` (``set_delivery_timeout``): with Kafka Connect's
    Integer.MAX_VALUE a producer whose cluster is unreachable would never stop. Kafka's close
    with a timeout aborts the incomplete batches instead (their senders see the error)."""
    stopping = asyncio.ensure_future(producer.stop())
    done, _ = await asyncio.wait({stopping}, timeout=timeout_s)
    if done:
        stopping.result()
        return True
    producer._message_accumulator.fail_all(Errors.KafkaTimeoutError(  # noqa: SLF001
        f"the producer was closed with batches still undelivered after {timeout_s:.0f}s"))
    try:
        await stopping
    except Exception as exc:  # noqa: BLE001 - its sender trips over the batches failed under it
        log.debug("stopping the producer after failing its batches: %r", exc)
        await client_of(producer).close()
    return False


# -- the at_least_once membership lease (lease.py) ----------------------------------------------

_MEMBERSHIP_REQUESTS = (HeartbeatRequest, JoinGroupRequest, SyncGroupRequest)


def rebalance_timeout_ms(consumer: AIOKafkaConsumer) -> int:
    """The rebalance timeout the consumer's JoinGroups carry (aiokafka's ``rebalance_timeout_ms``
    argument, 30 s by default)."""
    return int(consumer._rebalance_timeout_ms)  # noqa: SLF001


def guard_produce_with_membership(consumer: AIOKafkaConsumer, producer: AIOKafkaProducer,
                                  lease: MembershipLease,
                                  renew: Callable[[], Awaitable[None]]) -> None:
    """Send ``producer``'s ProduceRequests only while ``consumer``'s group membership lease
    holds (lease.py): the at_least_once zombie guard.

    The consumer's Heartbeat, JoinGroup and SyncGroup answers extend ``lease``. A ProduceRequest
    is checked against it after its connection is ready and immediately before aiokafka writes
    it: from the check to the transport write nothing awaits (aiokafka's ``send`` finds the
    ready connection without suspending, then encodes and writes), so the window left is that
    of a few instructions. When the lease has run out the request is held and ``renew`` is
    awaited (a Heartbeat for the tasks' generation, ``check_membership``, whose answer extends
    the lease): if it raises ``FencedByGroupError`` the member is gone, the lease is lost for
    good and the request fails with ``MembershipLostError`` (its batches are never sent); any
    other failure fails it with the retriable ``MembershipUnconfirmedError``, so aiokafka
    offers its batches again after its retry backoff."""
    watched = client_of(consumer)
    send_membership = watched.send

    async def noting_send(node_id: int, request: Any, *,
                          group: ConnectionGroup = ConnectionGroup.DEFAULT) -> Any:
        if not isinstance(request, _MEMBERSHIP_REQUESTS):
            return await send_membership(node_id, request, group=group)
        sent_at = lease_clock()  # before the write: the conservative end
        response = await send_membership(node_id, request, group=group)
        lease.answered(sent_at, int(getattr(response, "error_code", -1)))
        return response

    watched.send = noting_send  # type: ignore[method-assign]

    gated = client_of(producer)
    send_produce = gated.send
    renewing: list[asyncio.Future[None]] = []  # one renewal at a time, shared by every node

    async def renew_once() -> None:
        if not renewing or renewing[0].done():
            renewing[:] = [asyncio.ensure_future(renew())]
        await asyncio.shield(renewing[0])

    async def gated_send(node_id: int, request: Any, *,
                         group: ConnectionGroup = ConnectionGroup.DEFAULT) -> Any:
        if isinstance(request, ProduceRequest):
            while True:
                if not await gated.ready(node_id, group=group):
                    raise Errors.NodeNotReadyError(f"node {node_id} is not ready")
                if lease.holds():
                    break  # no await from here to the write (see the docstring)
                if lease.lost is not None:
                    raise MembershipLostError(str(lease.lost)) from lease.lost
                try:
                    await renew_once()
                except FencedByGroupError as exc:
                    lease.lost = exc
                    log.warning("a produce request was held (the membership lease had run "
                                "out) and the group says this member is gone: not sent (%s)",
                                exc)
                    raise MembershipLostError(str(exc)) from exc
                except Errors.KafkaError as exc:
                    raise MembershipUnconfirmedError(
                        f"the membership lease ran out and could not be renewed: {exc!r}"
                    ) from exc
                lease.renewals += 1
                if lease.holds():
                    continue
                if lease.last_answer == REBALANCE_IN_PROGRESS:
                    # Still known, but only as part of a rebalance that may have begun a
                    # rebalance timeout ago: it can complete without this member any moment.
                    lease.lost = FencedByGroupError(
                        "the group is rebalancing and may already have passed this member's "
                        "rebalance timeout")
                    raise MembershipLostError(str(lease.lost))
                raise MembershipUnconfirmedError(
                    f"the membership lease could not be renewed (answer {lease.last_answer})")
        return await send_produce(node_id, request, group=group)

    gated.send = gated_send  # type: ignore[method-assign]
