"""Committed offsets as the group APIs see them: OffsetCommit/OffsetFetch rules, offset
expiry, DeleteGroups, and the small API the transaction coordinator calls (KIP-447).

A mixin of GroupCoordinator, kept apart so membership and offsets each read on their own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..topics import OFFSETS_TOPIC
from . import errors
from .group import Group, GroupState
from .offsets import OffsetStore, TopicPartition
from .offsets_codec import GROUP_METADATA_KEY_VERSION, OffsetAndMetadata
from .protocols import GroupProtocol, GroupType
from .subscription import ALL_TOPICS, subscribed_topics

if TYPE_CHECKING:
    from ..config import BrokerConfig
    from ..server import Broker

log = logging.getLogger(__name__)

OFFSET_METADATA_MAX_BYTES = 4096  # Kafka's offset.metadata.max.bytes
EMPTY = GroupState.EMPTY
COMPLETING = GroupState.COMPLETING_REBALANCE
DEAD = GroupState.DEAD


class OffsetOperations:
    """Offset-side operations of the group coordinator."""

    broker: Broker
    config: BrokerConfig
    groups: dict[str, Group]
    offsets: OffsetStore
    protocols: dict[GroupType, GroupProtocol]

    def owner(self, group_id: str) -> GroupProtocol | None:
        raise NotImplementedError  # GroupCoordinator's

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def _get_or_create(self, group_id: str) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        return group

    async def expire_offsets(self, now_ms: int) -> int:
        """offsets.retention.minutes: drop the offsets of groups Empty for that long (counted
        from the later of the group emptying and the commit), then forget groups that have
        nothing left. Returns how many offsets were removed."""
        retention_ms = self.config.offsets_retention_minutes * 60_000
        removed = 0
        for group in list(self.groups.values()):
            if not group.is_(EMPTY):
                continue
            expired = [
                tp for tp, value in self.offsets.all_for(group.group_id).items()
                if now_ms - max(group.state_since_ms, value.commit_timestamp) >= retention_ms
            ]
            if expired:
                await self.offsets.delete_offsets(group.group_id, expired)
                removed += len(expired)
                log.info("group %s: %d committed offset(s) expired", group.group_id,
                         len(expired))
            if (self.groups.get(group.group_id) is group and group.is_(EMPTY)
                    and not group.pending_members
                    and not self.offsets.has_offsets(group.group_id)
                    and not self.offsets.has_pending(group.group_id)):
                group.transition_to(DEAD)
                group.cancel_join_timer()
                del self.groups[group.group_id]
                self.offsets.write_group_record(group.group_id, GROUP_METADATA_KEY_VERSION, None)
        for protocol in self.protocols.values():
            for listing in list(protocol.listings()):
                group_id = listing.group_id
                since = protocol.empty_since_ms(group_id)
                if since is None:
                    continue
                expired = [tp for tp, value in self.offsets.all_for(group_id).items()
                           if now_ms - max(since, value.commit_timestamp) >= retention_ms]
                if expired:
                    await self.offsets.delete_offsets(group_id, expired)
                    removed += len(expired)
                    log.info("%s group %s: %d committed offset(s) expired",
                             protocol.group_type.value, group_id, len(expired))
                if (protocol.has_group(group_id) and protocol.empty_since_ms(group_id) is not None
                        and not self.offsets.has_offsets(group_id)
                        and not self.offsets.has_pending(group_id)):
                    protocol.forget(group_id)
        return removed

    # -- API for the transaction coordinator ---------------------------------------------------

    def validate_member(self, group_id: str, generation_id: int, member_id: str,
                        group_instance_id: str | None) -> int:
        """TxnOffsetCommit's check (KIP-447): a set member id must be known, a set generation
        must be current, a static member must not be fenced. Returns an error code."""
        group = self.groups.get(group_id)
        if group is None:
            return errors.NONE
        if group.is_(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        if group.static_member_fenced(member_id, group_instance_id):
            return errors.FENCED_INSTANCE_ID
        if member_id and not group.has_member(member_id):
            return errors.UNKNOWN_MEMBER_ID
        if generation_id >= 0 and generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        return errors.NONE

    async def stage_transactional_offsets(
        self, producer_id: int, producer_epoch: int, group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, int]:
        """Write offsets inside a transaction; they stay pending until complete_transaction."""
        results, accepted = self._check_partitions(offsets)
        if self.owner(group_id) is None:
            self._get_or_create(group_id)
        await self.offsets.stage_transactional(producer_id, producer_epoch, group_id, accepted)
        return results

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """Called once the COMMIT/ABORT markers are written, including to the group's offsets
        partition: pending offsets of that producer become visible, or are dropped."""
        self.offsets.complete_transaction(producer_id, commit)

    def offsets_partition_for(self, group_id: str) -> tuple[str, int]:
        """The ``__consumer_offsets`` partition holding the group (created on first use)."""
        self.offsets.ensure_topic()
        return OFFSETS_TOPIC, self.offsets.partition_for(group_id)

    async def store_offsets(self, group_id: str,
                            offsets: Mapping[TopicPartition, OffsetAndMetadata]
                            ) -> dict[TopicPartition, int]:
        """Commit offsets whose sender was already validated; returns an error per partition."""
        results, accepted = self._check_partitions(offsets)
        await self.offsets.commit(group_id, accepted)
        return results

    # -- OffsetCommit / OffsetFetch -----------------------------------------------------------

    async def commit_offsets(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        unknown_group_error: int = errors.ILLEGAL_GENERATION, api_version: int = 9,
    ) -> dict[TopicPartition, int]:
        """``unknown_group_error``: the answer to a generation for a group that does not exist
        (Kafka: GROUP_ID_NOT_FOUND from OffsetCommit v9, ILLEGAL_GENERATION before). A group of
        another type (protocols.py) checks the sender itself (e.g. KIP-848's member epochs)."""
        owner = self.owner(group_id)
        if owner is not None:
            error = owner.check_commit(group_id, member_id, generation_id, api_version)
        else:
            error = self._check_commit(group_id, generation_id, member_id, group_instance_id,
                                       unknown_group_error)
        if error:
            return dict.fromkeys(offsets, error)
        return await self.store_offsets(group_id, offsets)

    def _check_commit(self, group_id: str, generation_id: int, member_id: str,
                      group_instance_id: str | None, unknown_group_error: int) -> int:
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:  # a group that only stores offsets here
                self._get_or_create(group_id)
                return errors.NONE
            return unknown_group_error
        if group.is_(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        if group.static_member_fenced(member_id, group_instance_id):
            return errors.FENCED_INSTANCE_ID
        if generation_id < 0 and group.is_(EMPTY):
            return errors.NONE
        if not group.has_member(member_id):
            return errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        if group.is_(COMPLETING):
            return errors.REBALANCE_IN_PROGRESS
        group.members[member_id].last_heartbeat = self._now()
        return errors.NONE

    def _check_partitions(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                          ) -> tuple[dict[TopicPartition, int],
                                     dict[TopicPartition, OffsetAndMetadata]]:
        results: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        topics = self.broker.topics.topics
        for (topic, partition), value in offsets.items():
            known = topics.get(topic)
            if known is None or not 0 <= partition < len(known.partitions):
                results[(topic, partition)] = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif len(value.metadata.encode("utf-8")) > OFFSET_METADATA_MAX_BYTES:
                results[(topic, partition)] = errors.OFFSET_METADATA_TOO_LARGE
            else:
                results[(topic, partition)] = errors.NONE
                accepted[(topic, partition)] = value
        return results, accepted

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool = False,
    ) -> list[tuple[TopicPartition, OffsetAndMetadata | None, int]]:
        """Committed offsets (None = nothing committed); ``partitions=None`` means all."""
        if partitions is None:
            committed = self.offsets.all_for(group_id)
            wanted: list[TopicPartition] = sorted(committed)
        else:
            wanted = partitions
        out = []
        for tp in wanted:
            if require_stable and self.offsets.has_pending(group_id, tp):
                out.append((tp, None, errors.UNSTABLE_OFFSET_COMMIT))
            else:
                out.append((tp, self.offsets.get(group_id, tp), errors.NONE))
        return out

    # -- OffsetDelete -------------------------------------------------------------------------

    async def delete_group_offsets(self, group_id: str, partitions: list[TopicPartition]
                                   ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete (KIP-496), as Kafka's GroupCoordinator.handleDeleteOffsets: an Empty
        group loses the offsets; an active `consumer` group keeps those of topics it subscribes
        to (GROUP_SUBSCRIBED_TO_TOPIC); any other active group is NON_EMPTY_GROUP. The deletions
        are tombstones in __consumer_offsets, so a restart does not bring them back."""
        group = self.groups.get(group_id)
        owner = self.owner(group_id)
        if (owner is None and (group is None or group.is_(DEAD))
                and not self.offsets.has_offsets(group_id)):
            return errors.GROUP_ID_NOT_FOUND, {}
        results: dict[TopicPartition, int] = {}
        subscribed: frozenset[str] | None = None
        if owner is not None:
            if not owner.is_empty(group_id):
                topics = owner.subscribed_topics(group_id)
                if topics is None:
                    return errors.NON_EMPTY_GROUP, {}
                subscribed = frozenset(topics)
        elif group is not None and not group.is_(EMPTY, DEAD):
            if group.protocol_type != "consumer":
                return errors.NON_EMPTY_GROUP, {}
            subscribed = subscribed_topics(group)
        deletable = []
        for tp in partitions:
            if tp[0] not in self.broker.topics.topics:
                results[tp] = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif subscribed is not None and (subscribed is ALL_TOPICS or tp[0] in subscribed):
                results[tp] = errors.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = errors.NONE
                deletable.append(tp)
        await self.offsets.delete_offsets(group_id, deletable)
        if deletable:
            log.info("group %s: deleted %d committed offset(s)", group_id, len(deletable))
        return errors.NONE, results

    # -- DeleteGroups -------------------------------------------------------------------------

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        """Only Empty groups can go; their offsets are tombstoned in __consumer_offsets."""
        results: dict[str, int] = {}
        for group_id in group_ids:
            owner = self.owner(group_id)
            if owner is not None:
                if not owner.is_empty(group_id):
                    results[group_id] = errors.NON_EMPTY_GROUP
                    continue
                owner.forget(group_id)
                await owner.deleted(group_id)
                await self.offsets.delete_group(group_id)
                results[group_id] = errors.NONE
                log.info("deleted %s group %s", owner.group_type.value, group_id)
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_(DEAD):
                results[group_id] = errors.GROUP_ID_NOT_FOUND
            elif not group.is_(EMPTY):
                results[group_id] = errors.NON_EMPTY_GROUP
            else:
                group.transition_to(DEAD)
                group.cancel_join_timer()
                del self.groups[group_id]
                await self.offsets.delete_group(group_id)
                results[group_id] = errors.NONE
                log.info("deleted group %s", group_id)
        return results
