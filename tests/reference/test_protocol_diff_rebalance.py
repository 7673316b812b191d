"""Differential tests of the classic rebalance protocol: several members, each on its own
connection (a JoinGroup parks until the rebalance completes), the same script against our broker
and Apache Kafka, answers compared field by field.

What is compared: a rebalance waits for every known member (up to the rebalance timeout) before
it completes, which commits are accepted from a member whose partitions are being revoked or
who has left, and what becomes of a member that never sends SyncGroup (Kafka's pending-sync
expiry) or a static member that does not rejoin (KIP-345: kept, not removed).
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .compare import Pair, Side
from .steps import (
    HEARTBEAT,
    OFFSET_COMMIT,
    SYNC_GROUP,
    create_topic,
    find_coordinator,
    join_group,
)

LEAVE_GROUP = 13


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Member:
    """One classic-group member with a connection of its own."""

    def __init__(self, side: Side, group: str, topic: str, rebalance_ms: int = 30000,
                 instance: str | None = None) -> None:
        self.side, self.group, self.topic = side, group, topic
        self.conn = side.fresh()
        self.rebalance_ms = rebalance_ms
        self.instance = instance
        self.member_id = ""
        self.generation = -1

    def call(self, api_key: int, body: dict[str, Any]) -> Any:
        return self.conn.send(api_key, self.side.versions[api_key], body)

    def join(self) -> Any:
        """JoinGroup (again with the handed-out id after MEMBER_ID_REQUIRED); parks until the
        rebalance completes."""
        body = {"group_id": self.group, "session_timeout": 10000,
                "rebalance_timeout": self.rebalance_ms, "member_id": self.member_id,
                "group_instance_id": self.instance, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}], "reason": None}
        answer, self.member_id = join_group(self.call, body)
        if answer["error_code"] == "none":
            self.member_id, self.generation = answer["member_id"], answer["generation_id"]
        return answer

    def sync(self, assignments: list[Member] = ()) -> Any:  # type: ignore[assignment]
        return self.call(SYNC_GROUP, {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": self.instance,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m.member_id, "assignment": b"x"}
                            for m in assignments]})

    def heartbeat(self) -> str:
        return self.call(HEARTBEAT, {"group_id": self.group, "generation_id": self.generation,
                                     "member_id": self.member_id,
                                     "group_instance_id": self.instance})["error_code"]

    def commit(self, offset: int) -> str:
        answer = self.call(OFFSET_COMMIT, {
            "group_id": self.group, "generation_id_or_member_epoch": self.generation,
            "member_id": self.member_id, "group_instance_id": self.instance,
            "topics": [{"name": self.topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        return answer["topics"][0]["partitions"][0]["error_code"]

    def leave(self) -> Any:
        return self.call(LEAVE_GROUP, {"group_id": self.group, "members": [
            {"member_id": self.member_id, "group_instance_id": self.instance, "reason": None}]})

    def heartbeat_until_not(self, code: str, timeout: float = 20.0) -> str:
        """Heartbeat (every 100 ms, as a consumer would) until the answer changes from
        ``code``; what it became, or ``code`` still at the deadline."""
        deadline = time.monotonic() + timeout
        answer = self.heartbeat()
        while answer == code and time.monotonic() < deadline:
            time.sleep(0.1)
            answer = self.heartbeat()
        return answer

    def close(self) -> None:
        self.conn.close()


def shape(answer: Any, *members: Member) -> dict[str, Any]:
    """A JoinGroup answer without the ids that differ per run: who is listed, by position."""
    ids = {m.member_id: f"m{i}" for i, m in enumerate(members)}
    return {"error_code": answer["error_code"], "generation_id": answer["generation_id"],
            "protocol_name": answer["protocol_name"],
            "leader": ids.get(answer["leader"], answer["leader"] or None),
            "members": sorted(ids.get(m["member_id"], "?") for m in answer["members"])}


def test_rebalance_waits_for_known_members_and_fences_commits(pair: Pair) -> None:
    """A joins; B joins while A is Stable: B's JoinGroup parks until A rejoins (Kafka waits up
    to the rebalance timeout, 30 s here), A may still commit while the rebalance prepares, a
    commit before SyncGroup is REBALANCE_IN_PROGRESS, a member that left is refused."""
    topic, group = unique("rb"), unique("rb-group")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        find_coordinator(side, group)
        a, b = Member(side, group, topic), Member(side, group, topic)
        out: dict[str, Any] = {}
        with ThreadPoolExecutor(1) as pool:
            try:
                first = a.join()
                out["a joins alone"] = shape(first, a)
                out["a syncs"] = a.sync([a])["error_code"]
                b_join: Future[Any] = pool.submit(b.join)
                out["a heartbeat sees the rebalance"] = a.heartbeat_until_not("none")
                out["b still parked"] = not b_join.done()
                out["a commits while the rebalance prepares"] = a.commit(1)
                out["b still parked after a's commit"] = not b_join.done()
                a_again = a.join()
                b_first = b_join.result(30)
                out["a rejoins"] = shape(a_again, a, b)
                out["b joins"] = shape(b_first, a, b)
                follower = b if a_again["leader"] == a.member_id else a
                out["commit before sync"] = follower.commit(2)
                leader = a if follower is b else b
                out["leader syncs"] = leader.sync([a, b])["error_code"]
                out["follower syncs"] = follower.sync()["error_code"]
                out["stable commit"] = follower.commit(3)
                out["leader leaves"] = leader.leave()["members"][0]["error_code"]
                out["left member commits"] = leader.commit(4)
                out["left member heartbeats"] = leader.heartbeat()
                out["remaining member heartbeats"] = follower.heartbeat()
                out["remaining member commits during revoke"] = follower.commit(5)
                out["remaining member rejoins"] = shape(follower.join(), follower)
            finally:
                a.close()
                b.close()
        return out

    ours = pair.check(scenario)
    assert ours["b still parked"] and ours["a rejoins"]["members"] in (["m0", "m1"], [])
    assert ours["a heartbeat sees the rebalance"] == "rebalance_in_progress"


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout(pair: Pair) -> None:
    """Kafka's pending-sync expiry: a member that got its JoinGroup answer but sends no
    SyncGroup within the rebalance timeout is removed and the group rebalances again."""
    topic, group = unique("sync"), unique("sync-group")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        find_coordinator(side, group)
        a = Member(side, group, topic, rebalance_ms=1500)
        b = Member(side, group, topic, rebalance_ms=1500)
        out: dict[str, Any] = {}
        with ThreadPoolExecutor(1) as pool:
            try:
                a.join()
                a.sync([a])
                b_join = pool.submit(b.join)
                a.heartbeat_until_not("none")
                a_again, b_first = a.join(), b_join.result(30)
                out["joined"] = (shape(a_again, a, b), shape(b_first, a, b))
                leader = a if a_again["leader"] == a.member_id else b
                silent = b if leader is a else a
                out["leader syncs"] = leader.sync([a, b])["error_code"]
                # The silent member never syncs: after the 1.5 s rebalance timeout it is
                # dropped and a rebalance starts, which the leader's heartbeat reports (well
                # before the silent member's 10 s session could end).
                out["leader heartbeat"] = leader.heartbeat_until_not("none", timeout=6)
                out["leader rejoins"] = shape(leader.join(), leader, silent)
                out["silent member syncs late"] = silent.sync()["error_code"]
                out["silent member heartbeats"] = silent.heartbeat()
            finally:
                a.close()
                b.close()
        return out

    ours = pair.check(scenario)
    assert ours["leader heartbeat"] == "rebalance_in_progress"


def test_static_member_that_does_not_rejoin_is_kept(pair: Pair) -> None:
    """KIP-345: when a rebalance times out, dynamic members that did not rejoin are removed but
    static ones stay (their group.instance.id keeps its partitions until its session ends)."""
    topic, group = unique("static"), unique("static-group")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        find_coordinator(side, group)
        static = Member(side, group, topic, rebalance_ms=1500, instance="static-1")
        dynamic = Member(side, group, topic, rebalance_ms=1500)
        newcomer = Member(side, group, topic, rebalance_ms=1500)
        out: dict[str, Any] = {}
        with ThreadPoolExecutor(2) as pool:
            try:
                static.join()
                static.sync([static])
                d_join = pool.submit(dynamic.join)
                static.heartbeat_until_not("none")
                s_again = static.join()
                out["dynamic joins"] = shape(d_join.result(30), static, dynamic)
                leader = static if s_again["leader"] == static.member_id else dynamic
                other = dynamic if leader is static else static
                leader.sync([static, dynamic])
                other.sync()
                out["two members"] = shape(s_again, static, dynamic)
                # A third member joins; only the dynamic member and the newcomer rejoin.
                n_join = pool.submit(newcomer.join)
                dynamic.heartbeat_until_not("none")
                d_again = pool.submit(dynamic.join)
                n_first, d_second = n_join.result(30), d_again.result(30)
                answers = [shape(x, static, dynamic, newcomer) for x in (n_first, d_second)]
                # The static leader did not rejoin: Kafka hands leadership to a member that
                # did, whichever its map yields first, so only "exactly one leader" compares.
                out["after the timeout"] = {
                    "errors": [a["error_code"] for a in answers],
                    "generations": [a["generation_id"] for a in answers],
                    "leaders": sum(1 for a in answers if a["members"]),
                    "leader sees": max((a["members"] for a in answers), key=len)}
                out["static member heartbeats with its old generation"] = static.heartbeat()
            finally:
                static.close()
                dynamic.close()
                newcomer.close()
        return out

    pair.check(scenario)
