"""group.consumer.migration.policy (KIP-848 online migration) through the handlers: what each
policy allows, a classic member of a consumer group fenced when it does not rejoin in time, and
the key refused at start when it is not one of Kafka's four values. Kafka's own answers for the
default policy are compared in tests/reference/test_protocol_diff_group_migration.py."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from handler_calls import call, run_broker
from pydantic import ValidationError

from streams.broker import Broker, BrokerConfig
from streams.broker.groups import errors
from streams.broker.groups.group import GroupState
from streams.broker.groups.protocols import GroupType

JOIN, SYNC, HEARTBEAT, CONSUMER_HEARTBEAT = 11, 14, 12, 68


def subscription() -> bytes:
    return struct.pack(">hih", 1, 1, 1) + b"t" + struct.pack(">ii", -1, 0)


async def classic_member(broker: Broker) -> tuple[str, int]:
    """A classic consumer that joined group g and took all 4 partitions of t."""
    body = {"group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 2_000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": ({"name": "range", "metadata": subscription()},)}
    first = await call(broker, JOIN, 9, body)
    joined = await call(broker, JOIN, 9, {**body, "member_id": first.member_id})
    assert joined.error_code.value == errors.NONE
    plan = struct.pack(">hih", 1, 1, 1) + b"t" + struct.pack(">i4ii", 4, 0, 1, 2, 3, -1)
    synced = await call(broker, SYNC, 5, {
        "group_id": "g", "generation_id": joined.generation_id, "member_id": joined.member_id,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": ({"member_id": joined.member_id, "assignment": plan},)})
    assert synced.error_code.value == errors.NONE
    return joined.member_id, joined.generation_id


async def consumer_heartbeat(broker: Broker, member_id: str, epoch: int) -> Any:
    return await call(broker, CONSUMER_HEARTBEAT, 1, {
        "group_id": "g", "member_id": member_id, "member_epoch": epoch,
        "rebalance_timeout": 30_000 if epoch == 0 else -1,
        "subscribed_topic_names": ("t",) if epoch == 0 else None,
        "topic_partitions": () if epoch == 0 else None})


def run(tmp_path: Path, policy: str, body: Any) -> None:
    run_broker(tmp_path, {"offsets_topic_num_partitions": 2,
                          "group_initial_rebalance_delay_ms": 0,
                          "group_min_session_timeout_ms": 1000,
                          "group_consumer_migration_policy": policy}, body, {"t": 4})


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_by_policy(tmp_path: Path, policy: str) -> None:
    async def body(broker: Broker) -> None:
        await classic_member(broker)
        answer = await consumer_heartbeat(broker, "a" * 22, 0)
        assert answer.error_code.value == errors.GROUP_ID_NOT_FOUND
        assert answer.error_message == "Group g is not a consumer group"
        assert broker.groups.group_type("g") is GroupType.CLASSIC
        assert broker.groups.groups["g"].is_(GroupState.STABLE)  # untouched

    run(tmp_path, policy, body)


def test_upgrade_only_keeps_the_consumer_group(tmp_path: Path) -> None:
    """Policy ``upgrade``: the group upgrades, and stays a consumer group (with its classic
    member) when the consumer-protocol member leaves."""
    async def body(broker: Broker) -> None:
        classic_id, _ = await classic_member(broker)
        joined = await consumer_heartbeat(broker, "a" * 22, 0)
        assert joined.error_code.value == errors.NONE
        assert broker.groups.group_type("g") is GroupType.CONSUMER
        left = await consumer_heartbeat(broker, "a" * 22, -1)
        assert left.error_code.value == errors.NONE
        assert broker.groups.group_type("g") is GroupType.CONSUMER
        consumer = broker.groups.protocol(GroupType.CONSUMER)
        assert list(consumer.groups["g"].members) == [classic_id]  # type: ignore[attr-defined]

    run(tmp_path, "upgrade", body)


def test_classic_member_that_does_not_rejoin_is_fenced(tmp_path: Path) -> None:
    """Told to rejoin (REBALANCE_IN_PROGRESS), a classic member that stays away past its
    rebalance timeout (2 s) is removed; the group then has only the consumer member."""
    async def body(broker: Broker) -> None:
        classic_id, generation = await classic_member(broker)
        assert (await consumer_heartbeat(broker, "a" * 22, 0)).error_code.value == errors.NONE
        answer = await call(broker, HEARTBEAT, 4, {"group_id": "g", "member_id": classic_id,
                                                   "generation_id": generation})
        assert answer.error_code.value == errors.REBALANCE_IN_PROGRESS
        consumer: Any = broker.groups.protocol(GroupType.CONSUMER)
        now = broker.groups._now()
        consumer.tick(now + 1.0)
        assert classic_id in consumer.groups["g"].members  # within its rebalance timeout
        consumer.tick(now + 2.5)
        assert list(consumer.groups["g"].members) == ["a" * 22]
        late = await call(broker, HEARTBEAT, 4, {"group_id": "g", "member_id": classic_id,
                                                 "generation_id": generation})
        assert late.error_code.value == errors.UNKNOWN_MEMBER_ID

    run(tmp_path, "bidirectional", body)


def test_policy_value_checked_at_start() -> None:
    assert BrokerConfig(group_consumer_migration_policy="UPGRADE"
                        ).group_consumer_migration_policy == "upgrade"
    with pytest.raises(ValidationError, match="group_consumer_migration_policy"):
        BrokerConfig(group_consumer_migration_policy="sideways")


def test_consumer_member_session_expiry_downgrades(tmp_path: Path) -> None:
    """The last consumer-protocol member's session runs out (group.consumer.session.timeout.ms,
    45 s): the group becomes classic, keeps the generation line going and rebalances, so the
    classic member is told to rejoin."""
    async def body(broker: Broker) -> None:
        classic_id, generation = await classic_member(broker)
        joined = await consumer_heartbeat(broker, "a" * 22, 0)
        assert joined.error_code.value == errors.NONE
        consumer: Any = broker.groups.protocol(GroupType.CONSUMER)
        epoch = consumer.groups["g"].group_epoch
        # The classic member stays alive (its heartbeats), the consumer member goes silent.
        member = consumer.groups["g"].members[classic_id]
        member.classic.session_deadline = float("inf")
        consumer.tick(broker.groups._now() + 46)
        assert broker.groups.group_type("g") is GroupType.CLASSIC
        group = broker.groups.groups["g"]
        assert group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == epoch
        assert list(group.members) == [classic_id]
        answer = await call(broker, HEARTBEAT, 4, {"group_id": "g", "member_id": classic_id,
                                                   "generation_id": epoch})
        assert answer.error_code.value == errors.REBALANCE_IN_PROGRESS
        assert epoch > generation

    run(tmp_path, "bidirectional", body)


@pytest.mark.parametrize("policy", ["bidirectional", "upgrade"])
def test_leave_group_of_the_last_consumer_member(tmp_path: Path, policy: str) -> None:
    """LeaveGroup naming the last consumer-protocol member (an admin removing it): the group
    goes back to classic, as Kafka 4.4 does (compared in
    test_protocol_diff_group_migration.py), unless the policy forbids downgrades; then the
    member is only removed. Its next heartbeat finds a classic group: GROUP_ID_NOT_FOUND."""
    async def body(broker: Broker) -> None:
        classic_id, _ = await classic_member(broker)
        joined = await consumer_heartbeat(broker, "a" * 22, 0)
        assert joined.error_code.value == errors.NONE
        left = await call(broker, 13, 5, {"group_id": "g", "members": (
            {"member_id": "a" * 22, "group_instance_id": None},)})
        assert left.error_code.value == errors.NONE
        assert [m.error_code.value for m in left.members] == [errors.NONE]
        consumer: Any = broker.groups.protocol(GroupType.CONSUMER)
        if policy == "upgrade":
            assert broker.groups.group_type("g") is GroupType.CONSUMER
            assert list(consumer.groups["g"].members) == [classic_id]
            return
        assert broker.groups.group_type("g") is GroupType.CLASSIC
        group = broker.groups.groups["g"]
        assert group.is_(GroupState.PREPARING_REBALANCE) and list(group.members) == [classic_id]
        again = await consumer_heartbeat(broker, "a" * 22, joined.member_epoch)
        assert again.error_code.value == errors.GROUP_ID_NOT_FOUND

    run(tmp_path, policy, body)
