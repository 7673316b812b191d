"""KIP-932 share-partition state machine and its durable state in __share_group_state."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from streams.broker.config import BrokerConfig
from streams.broker.groups.share_partition import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    NOT_IN_CACHE,
    AckBatch,
    AcknowledgeType,
    InvalidShareConfig,
    RecordState,
    ShareConfig,
    SharePartition,
)
from streams.broker.groups.share_state import ShareKey, ShareStateStore
from streams.broker.topics import SHARE_STATE_TOPIC, TopicManager

ACCEPT, RELEASE, REJECT, GAP = (
    AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP
)
LOCK = 15_000


def _part(start: int = 0, limit: int = 3, locks: int = 100) -> SharePartition:
    return SharePartition(start, ShareConfig(LOCK, limit, locks))


def _ack(first: int, last: int, *types: AcknowledgeType) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def test_members_get_disjoint_records_and_accept_moves_start() -> None:
    part = _part()
    a = part.acquire("a", log_end_offset=10, now_ms=0, max_records=4)
    b = part.acquire("b", log_end_offset=10, now_ms=0, max_records=4)
    assert [r.offset for r in a] == [0, 1, 2, 3]
    assert [r.offset for r in b] == [4, 5, 6, 7]
    assert all(r.delivery_count == 1 for r in a + b)
    assert part.in_flight() == 8
    # b finishes first: the start offset waits for a's records.
    assert part.acknowledge("b", [_ack(4, 7, ACCEPT)]) == 0
    assert part.start_offset == 0
    assert part.acknowledge("a", [_ack(0, 3, ACCEPT)]) == 0
    assert part.start_offset == 8 and part.records == {}
    assert part.lag(10) == 2


def test_acks_of_records_not_held_are_invalid_record_state_and_change_nothing() -> None:
    part = _part()
    part.acquire("a", 10, 0, 2)  # 0, 1
    part.acquire("b", 10, 0, 2)  # 2, 3
    before = {o: (r.state, r.member_id) for o, r in part.records.items()}
    assert part.acknowledge("a", [_ack(0, 2, ACCEPT)]) == INVALID_RECORD_STATE  # 2 is b's
    # past the records in flight: Kafka 4.4's "Batch record not found. The first offset in
    # request is past acquired records." (INVALID_REQUEST)
    assert part.acknowledge("a", [_ack(8, 8, ACCEPT)]) == INVALID_REQUEST
    assert part.acknowledge("a", [_ack(3, 4, ACCEPT)]) == INVALID_REQUEST
    assert part.acknowledge("a", [_ack(1, 0, ACCEPT)]) == INVALID_REQUEST  # empty range
    assert part.acknowledge("a", [_ack(0, 1, ACCEPT, ACCEPT, ACCEPT)]) == INVALID_REQUEST
    # one offset twice (touching batches): refused as a whole, as Kafka rolls back
    assert part.acknowledge("a", [_ack(0, 1, ACCEPT), _ack(1, 1, ACCEPT)]) == (
        INVALID_RECORD_STATE)
    assert {o: (r.state, r.member_id) for o, r in part.records.items()} == before
    assert part.acknowledge("a", [_ack(0, 1, ACCEPT)]) == 0
    assert part.start_offset == 2
    assert part.acknowledge("a", [_ack(0, 0, ACCEPT)]) == 0  # before the start: complete
    assert part.acknowledge("b", [_ack(3, 3, ACCEPT)]) == 0
    assert part.acknowledge("b", [_ack(3, 3, ACCEPT)]) == INVALID_RECORD_STATE  # twice
    assert INVALID_RECORD_STATE == 121


def test_refused_acks_carry_kafkas_messages() -> None:
    part = _part()
    assert part.acknowledge_explained("a", [_ack(0, 0, ACCEPT)]) == (
        INVALID_RECORD_STATE, NOT_IN_CACHE)  # nothing in flight
    part.acquire("a", 10, 0, 2)  # 0, 1
    part.acquire("b", 10, 0, 2)  # 2, 3
    assert part.acknowledge_explained("a", [_ack(2, 2, ACCEPT)]) == (
        INVALID_RECORD_STATE, "Member is not the owner of offset")
    assert part.acknowledge_explained("a", [_ack(6, 7, ACCEPT)]) == (
        INVALID_REQUEST, "Batch record not found. The first offset in request is past "
        "acquired records.")
    assert part.acknowledge_explained("a", [_ack(1, 7, ACCEPT)]) == (
        INVALID_REQUEST, "Batch record not found. The last offset in request is past "
        "acquired records.")
    assert part.acknowledge_explained("b", [_ack(3, 3, ACCEPT)]) == (0, None)
    assert part.acknowledge_explained("b", [_ack(3, 3, ACCEPT)]) == (
        INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired.")


def test_renew_restarts_the_lock_of_held_records_only() -> None:
    """KIP-1222's RENEW: the record stays acquired by its member, its lock runs from the
    renewal; a record the member does not hold is INVALID_RECORD_STATE, nothing renewed."""
    part = _part()
    part.acquire("a", 4, 0, 2)  # 0, 1 locked until LOCK
    part.acquire("b", 4, 0, 2)  # 2, 3
    renew = AcknowledgeType.RENEW
    assert part.acknowledge("a", [_ack(0, 2, renew)], now_ms=LOCK - 1) == INVALID_RECORD_STATE
    assert part.acknowledge("a", [_ack(0, 0, renew)], now_ms=LOCK - 1) == 0
    assert part.expire_locks(LOCK) == 3  # 1, 2, 3: their first locks ran out
    assert part.records[0].state is RecordState.ACQUIRED and part.records[0].member_id == "a"
    assert part.records[0].delivery_count == 1
    assert part.expire_locks(2 * LOCK - 1) == 1
    assert part.records[0].state is RecordState.AVAILABLE


def test_renew_refused_when_the_group_disables_it() -> None:
    """share.renew.acknowledge.enable=false: RENEW of a held record is INVALID_RECORD_STATE
    with Kafka's message and renews nothing (the lock still runs out); other types are taken."""
    part = SharePartition(0, ShareConfig(LOCK, 3, 100, renew_acknowledge_enabled=False))
    part.acquire("a", 2, 0, 2)  # 0, 1
    renew = AcknowledgeType.RENEW
    assert part.acknowledge_explained("a", [_ack(0, 1, renew)], now_ms=LOCK - 1) == (
        INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group.")
    assert part.acknowledge("a", [_ack(1, 1, ACCEPT)]) == 0
    assert part.expire_locks(LOCK) == 1
    assert part.records[0].state is RecordState.AVAILABLE


def test_acks_spanning_the_whole_offset_range_answer_at_once() -> None:
    """An acknowledgement batch of one type over 2**64 offsets (first -2**63, last 2**63-1, or
    a gap from the start offset to the end of time) was walked offset by offset and hung the
    broker's event loop (fuzz seed 1362138863); now only the offsets in flight are visited."""
    part = _part()
    part.acquire("a", 4, 0, 4)  # 0-3
    low, high = -(2**63), 2**63 - 1
    assert part.acknowledge("a", [_ack(low, high, ACCEPT)]) == INVALID_RECORD_STATE
    assert part.acknowledge("a", [_ack(0, high, GAP)]) == INVALID_REQUEST
    assert part.acknowledge("a", [_ack(low, 1, ACCEPT)]) == 0  # 0-1; before 0: complete
    assert part.start_offset == 2
    part.acknowledge("a", [_ack(2, 3, RELEASE)])
    part.acquire("a", 4, 0, 2)  # 2-3 again
    assert part.acknowledge("a", [_ack(low, 3, GAP)]) == 0
    assert part.acknowledge("a", [_ack(2, 3, ACCEPT)]) == 0
    assert part.records == {}  # nothing in flight: past the end is never fetched (121)
    assert part.acknowledge("a", [_ack(4, high, ACCEPT)]) == INVALID_RECORD_STATE
    assert part.acknowledge("a", [_ack(4, high, GAP)]) == 0


def test_per_offset_types_release_reject_and_gaps() -> None:
    part = _part()
    part.acquire("a", 4, 0, 10)
    assert part.acknowledge("a", [_ack(0, 3, ACCEPT, RELEASE, REJECT, GAP)]) == 0
    assert part.records[1].state is RecordState.AVAILABLE
    assert part.records[2].state is RecordState.ARCHIVED
    assert part.records[3].state is RecordState.ACQUIRED  # a gap acknowledges nothing
    again = part.acquire("b", 4, 0, 10)
    assert [(r.offset, r.delivery_count) for r in again] == [(1, 2)]
    assert part.start_offset == 1


def test_lock_expiry_redelivers_with_count_and_archives_at_limit() -> None:
    part = _part(limit=2)
    part.acquire("a", 1, now_ms=0, max_records=1)
    assert part.next_lock_deadline() == LOCK
    assert part.acquire("b", 1, now_ms=LOCK - 1, max_records=1) == []  # still locked
    second = part.acquire("b", 1, now_ms=LOCK, max_records=1)
    assert [(r.offset, r.delivery_count) for r in second] == [(0, 2)]
    # a's late acknowledgement is refused: the lock moved to b.
    assert part.acknowledge("a", [_ack(0, 0, ACCEPT)]) == INVALID_RECORD_STATE
    assert part.expire_locks(2 * LOCK) == 1  # the second delivery was the last
    assert part.start_offset == 1 and part.acquire("c", 1, 2 * LOCK, 1) == []


def test_member_leaving_releases_its_records() -> None:
    part = _part()
    part.acquire("a", 3, 0, 3)
    assert part.release_member("a") == 3
    assert [r.delivery_count for r in part.acquire("b", 3, 1, 3)] == [2, 2, 2]


def test_max_record_locks_caps_the_in_flight_span() -> None:
    part = _part(locks=100)
    got = part.acquire("a", 1000, 0, 500)
    assert len(got) == 100 and part.end_offset == 100
    assert part.acquire("b", 1000, 0, 500) == []
    part.acknowledge("a", [_ack(0, 9, ACCEPT)])
    assert [r.offset for r in part.acquire("b", 1000, 0, 500)] == list(range(100, 110))


def test_undeliverable_offsets_are_archived_not_delivered() -> None:
    part = _part()
    got = part.acquire("a", 6, 0, 10, undeliverable={1, 2, 5})
    assert [r.offset for r in got] == [0, 3, 4]
    part.acknowledge("a", [_ack(0, 0, ACCEPT)])
    assert part.start_offset == 3


def test_config_bounds_name_the_key() -> None:
    ShareConfig().validate()
    with pytest.raises(InvalidShareConfig, match="share.delivery.count.limit must be less"):
        ShareConfig(delivery_count_limit=11).validate()
    with pytest.raises(InvalidShareConfig, match="share.record.lock.duration.ms must be greater"):
        ShareConfig(record_lock_duration_ms=1000).validate()
    with pytest.raises(InvalidShareConfig, match="share.partition.max.record.locks"):
        ShareConfig(max_record_locks=5000).validate()


def test_random_members_deliver_every_record_once_accepted() -> None:
    """Several members, random acks, releases, crashes (lock expiry): every offset ends
    accepted exactly once or archived after the delivery limit, never lost."""
    rng = random.Random(7)
    part = _part(limit=4, locks=100)
    end, now = 500, 0
    accepted: list[int] = []
    archived: set[int] = set()
    held: dict[str, list[int]] = {m: [] for m in "abcd"}
    while part.start_offset < end:
        now += rng.randint(0, 4000)
        member = rng.choice("abcd")
        if not held[member]:
            held[member] = [r.offset for r in part.acquire(member, end, now, rng.randint(1, 20))]
            continue
        fate = rng.random()
        if fate < 0.1:
            held[member] = []  # crashed: its locks expire later
            continue
        batches, types = [], []
        for offset in held[member]:
            kind = ACCEPT if fate < 0.8 else rng.choice((RELEASE, REJECT))
            batches.append(_ack(offset, offset, kind))
            types.append((offset, kind))
        # What the member still holds (a late ack of a record handed to someone else after
        # its lock expired is skipped when that record is already complete, as in Kafka).
        owned = {o for o, r in part.records.items()
                 if r.state is RecordState.ACQUIRED and r.member_id == member}
        code = part.acknowledge(member, batches)
        if code == 0:
            accepted += [o for o, k in types if k is ACCEPT and o in owned]
            archived |= {o for o, k in types if k is REJECT and o in owned}
        held[member] = []
    assert len(accepted) == len(set(accepted)) and archived.isdisjoint(accepted)
    assert part.records == {}
    assert len(accepted) > 300


def test_state_survives_restart(tmp_path: Path) -> None:
    key = ShareKey("g", "t", 0)
    config = ShareConfig(LOCK, 3, 100)

    async def write() -> SharePartition:
        topics = TopicManager(BrokerConfig.from_mapping({"data_dir": tmp_path}))
        topics.load()
        store = ShareStateStore(topics, 3)
        part = SharePartition(0, config)
        part.acquire("a", 10, 0, 6)
        part.acknowledge("a", [_ack(0, 1, ACCEPT), _ack(3, 3, REJECT), _ack(4, 4, ACCEPT)])
        await store.save(key, part)
        other = SharePartition(5, config)
        await store.save(ShareKey("h", "t", 0), other)
        await store.delete([ShareKey("h", "t", 0)])
        assert topics.get(SHARE_STATE_TOPIC).configs == {"cleanup.policy": "compact"}
        topics.close()
        return part

    asyncio.run(write())
    topics = TopicManager(BrokerConfig.from_mapping({"data_dir": tmp_path}))
    topics.load()
    store = ShareStateStore(topics, 3)
    store.load()
    assert store.keys_of("h") == []
    part = store.restore(key, config)
    assert part is not None
    assert part.start_offset == 2
    # 2 and 5 were held by "a" when the broker stopped: nobody holds them now.
    states = {o: (r.state, r.delivery_count) for o, r in part.records.items()}
    assert states == {
        2: (RecordState.AVAILABLE, 1), 3: (RecordState.ARCHIVED, 1),
        4: (RecordState.ACKNOWLEDGED, 1), 5: (RecordState.AVAILABLE, 1),
    }
    again = part.acquire("b", 10, 0, 10)
    assert [(r.offset, r.delivery_count) for r in again] == [
        (2, 2), (5, 2), (6, 1), (7, 1), (8, 1), (9, 1)
    ]
    topics.close()
