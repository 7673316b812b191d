"""Group metadata across a broker SIGKILL (streams/broker/groups/group_store.py): a classic
group keeps its generation and members, a KIP-848 group its group epoch and members' epochs, a
share group its members' epochs. Members committing through the kill go on committing after the
restart with the generation or epoch they had, a stale member's commit is refused, and no
generation or epoch goes back when the groups change afterwards. Raw requests, so every
generation and epoch is seen as sent."""

from __future__ import annotations

import struct
import threading
import uuid
from pathlib import Path
from typing import Any

from helpers import BrokerProcess, create_topics, wait_until
from reference.wire import Connection

JOIN, SYNC, HEARTBEAT, COMMIT, CONSUMER_HEARTBEAT, SHARE_HEARTBEAT = 11, 14, 12, 8, 68, 76


def share_heartbeat(conn: Connection, member_id: str, epoch: int) -> dict[str, Any]:
    return conn.send(SHARE_HEARTBEAT, 1, {
        "group_id": "sg", "member_id": member_id, "member_epoch": epoch, "rack_id": None,
        "subscribed_topic_names": ["t"] if epoch == 0 else None})


def subscription() -> bytes:
    return struct.pack(">hih", 1, 1, 1) + b"t" + struct.pack(">ii", -1, 0)


def plan(partitions: list[int]) -> bytes:
    return struct.pack(">hih", 1, 1, 1) + b"t" + struct.pack(
        f">i{len(partitions)}ii", len(partitions), *partitions, -1)


def commit(conn: Connection, group: str, member: str, generation: int, offset: int) -> str:
    answer = conn.send(COMMIT, 9, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    return answer["topics"][0]["partitions"][0]["error_code"]


def classic_join(conn: Connection, member_id: str = "") -> dict[str, Any]:
    body = {"group_id": "cg", "session_timeout": 30000, "rebalance_timeout": 10000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "reason": None, "protocols": [{"name": "range", "metadata": subscription()}]}
    answer = conn.send(JOIN, 9, body)
    if answer["error_code"] == "member_id_required":
        answer = conn.send(JOIN, 9, {**body, "member_id": answer["member_id"]})
    assert answer["error_code"] == "none", answer
    return answer


def consumer_heartbeat(conn: Connection, member_id: str, epoch: int,
                       owned: list[int] | None, topic_id: Any = None) -> dict[str, Any]:
    return conn.send(CONSUMER_HEARTBEAT, 1, {
        "group_id": "kg", "member_id": member_id, "member_epoch": epoch, "instance_id": None,
        "rack_id": None, "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": ["t"] if epoch == 0 else None,
        "subscribed_topic_regex": None, "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else
        [{"topic_id": topic_id, "partitions": sorted(owned or [])}]})


class KipMember:
    def __init__(self, conn: Connection) -> None:
        self.conn, self.member_id, self.epoch = conn, uuid.uuid4().hex[:22], 0
        self.owned: list[int] = []
        self.topic_id: Any = None

    def beat(self) -> dict[str, Any]:
        answer = consumer_heartbeat(self.conn, self.member_id, self.epoch, self.owned,
                                    self.topic_id)
        if answer["error_code"] == "none":
            self.epoch = answer["member_epoch"]
            if answer["assignment"] is not None:
                parts = answer["assignment"]["topic_partitions"]
                self.owned = [p for t in parts for p in t["partitions"]]
                self.topic_id = uuid.UUID(str(parts[0]["topic_id"])) if parts \
                    else self.topic_id
        return answer

    def settle(self, *others: KipMember) -> None:
        def settled() -> bool:
            for member in (self, *others):
                assert member.beat()["error_code"] == "none"
            return bool(self.owned) and all(m.owned for m in others)
        wait_until(settled, 20, message="consumer group settles")


def test_generations_and_epochs_survive_sigkill(tmp_path: Path) -> None:
    properties = tmp_path / "broker.properties"
    properties.write_text("group.initial.rebalance.delay.ms=0\n")
    broker = BrokerProcess(tmp_path / "data", extra=["--config", str(properties)]).start()
    conns: list[Connection] = []
    try:
        create_topics(broker.bootstrap, {"t": 2})

        def connect() -> Connection:
            conn = Connection(broker.bootstrap)
            conns.append(conn)
            return conn

        # A classic member at generation 1, committing; a KIP-848 group of two.
        c = connect()
        joined = classic_join(c)
        member, generation = joined["member_id"], joined["generation_id"]
        synced = c.send(SYNC, 5, {
            "group_id": "cg", "generation_id": generation, "member_id": member,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": plan([0, 1])}]})
        assert synced["error_code"] == "none"
        k = connect()
        x, y = KipMember(k), KipMember(k)
        x.beat()
        y.beat()
        x.settle(y)
        epochs = {"x": x.epoch, "y": y.epoch}
        # A share group of one member.
        sharer = uuid.uuid4().hex[:22]
        share_epoch = share_heartbeat(k, sharer, 0)["member_epoch"]
        assert share_heartbeat(k, sharer, share_epoch)["error_code"] == "none"
        committed = [commit(c, "cg", member, generation, n) for n in range(1, 4)]
        committed += [commit(k, "kg", x.member_id, x.epoch, n) for n in range(1, 4)]
        assert set(committed) == {"none"}

        # Both members keep committing (each on a connection of its own) while the broker is
        # killed and restarted: every answer is "none" (or the connection is gone).
        committers = [Committer(broker.bootstrap, "cg", member, generation),
                      Committer(broker.bootstrap, "kg", x.member_id, x.epoch)]
        wait_until(lambda: all(m.acked >= 5 for m in committers), 20,
                   message="commits before the kill")
        broker.kill()
        for conn in conns:
            conn.close()
        conns.clear()
        before = [m.acked for m in committers]
        broker.start()
        wait_until(lambda: all(m.acked >= b + 5 for m, b in zip(committers, before,
                                                                  strict=True)), 30,
                   message="commits after the restart")
        for each in committers:
            each.stop()
            assert each.refused == [], each.refused

        c, k = connect(), connect()
        x.conn = y.conn = k
        # The classic member carries on in its generation; a stale generation is refused.
        assert c.send(HEARTBEAT, 4, {"group_id": "cg", "generation_id": generation,
                                     "member_id": member, "group_instance_id": None}
                      )["error_code"] == "none"
        last = {m.group: m.acked for m in committers}
        assert commit(c, "cg", member, generation - 1, 1) == "illegal_generation"
        assert commit(c, "cg", "someone-else", generation, 1) == "unknown_member_id"
        # The KIP-848 members keep their epochs; a stale epoch is refused.
        assert x.beat()["error_code"] == "none" and x.epoch == epochs["x"]
        assert y.beat()["error_code"] == "none" and y.epoch == epochs["y"]
        assert commit(k, "kg", x.member_id, x.epoch - 1, 1) == "stale_member_epoch"
        # The share member too (share sessions are not kept: clients open new ones).
        again = share_heartbeat(k, sharer, share_epoch)
        assert (again["error_code"], again["member_epoch"]) == ("none", share_epoch)
        # Changes after the restart move generations and epochs forward, never back.
        newcomer = connect()
        assert c.send(HEARTBEAT, 4, {"group_id": "cg", "generation_id": generation,
                                     "member_id": member, "group_instance_id": None}
                      )["error_code"] == "none"
        rejoined = _rejoin_both(c, newcomer, member, generation)
        assert rejoined > generation
        z = KipMember(k)
        first = z.beat()
        assert first["error_code"] == "none" and first["member_epoch"] > max(epochs.values())
        offsets = c.send(9, 8, {"groups": [{"group_id": g, "topics": None}
                                           for g in ("cg", "kg")], "require_stable": False})
        found = {g["group_id"]: g["topics"][0]["partitions"][0]["committed_offset"]
                 for g in offsets["groups"]}
        assert found == last  # the last acknowledged commit of each, no stale one after it
    finally:
        for conn in conns:
            conn.close()
        broker.stop()


class Committer:
    """Commits offsets 1, 2, 3... for a member in a loop, reconnecting whenever the broker is
    gone; ``acked`` is the last offset acknowledged, ``refused`` any other answer."""

    def __init__(self, bootstrap: str, group: str, member: str, generation: int) -> None:
        self.bootstrap, self.group, self.member, self.generation = (bootstrap, group, member,
                                                                    generation)
        self.acked = 0
        self.refused: list[str] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn: Connection | None = None
        while not self._stop.is_set():
            try:
                conn = conn or Connection(self.bootstrap, timeout=5)
                answer = commit(conn, self.group, self.member, self.generation, self.acked + 1)
            except (OSError, ConnectionError, EOFError, ValueError):
                if conn is not None:
                    conn.close()
                conn = None
                self._stop.wait(0.1)
                continue
            if answer == "none":
                self.acked += 1
            elif answer not in ("coordinator_load_in_progress", "not_coordinator",
                                "coordinator_not_available"):
                self.refused.append(answer)
            self._stop.wait(0.02)
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)


def _rejoin_both(old: Connection, new: Connection, member: str, current: int) -> int:
    """A second classic member joins; the first rejoins: the generation both get."""
    answers: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: answers.update(new=classic_join(new)))
    thread.start()
    def rebalancing() -> bool:
        return old.send(HEARTBEAT, 4, {"group_id": "cg", "generation_id": current,
                                       "member_id": member, "group_instance_id": None}
                        )["error_code"] == "rebalance_in_progress"
    wait_until(rebalancing, 20, message="the newcomer's JoinGroup starts a rebalance")
    answers["old"] = classic_join(old, member)
    thread.join(30)
    assert answers["old"]["generation_id"] == answers["new"]["generation_id"]
    return int(answers["old"]["generation_id"])
