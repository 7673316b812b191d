"""Differential tests of stateful APIs: idempotence, transactions, group offsets, configs,
ListOffsets and DeleteRecords (same requests to our broker and to Apache Kafka)."""

from __future__ import annotations

import uuid
from typing import Any

from streams.broker.records import ATTR_TRANSACTIONAL, Record, build_batch

from .compare import Pair, Side, assert_same
from .steps import (
    ADD_PARTITIONS_TO_TXN,
    DELETE_RECORDS,
    DESCRIBE_CONFIGS,
    EARLIEST,
    END_TXN,
    FETCH,
    INCREMENTAL_ALTER_CONFIGS,
    JOIN_GROUP,
    LATEST,
    MAX_TIMESTAMP,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    SETTLING,
    SYNC_GROUP,
    batch,
    consume,
    create_topic,
    fetch,
    find_coordinator,
    init_producer_id,
    list_offsets,
    partition_answer,
    produce,
)


def unique(prefix: str = "diff") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# -- idempotent producers ---------------------------------------------------------------------


def without_duplicate_append_time(answers: dict[str, Any], keys: list[str]) -> None:
    """docs/kafka-differences.md "Produce": Kafka's answer to a duplicate batch carries the
    cached batch's max timestamp in log_append_time even on CreateTime topics; ours -1."""
    for key in keys:
        partition_answer(answers[key])["log_append_time"] = None


def test_idempotent_sequences(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        init = init_producer_id(side)
        pid = init["producer_id"]

        def send(seq: int, count: int = 1, epoch: int = 0, producer: int = pid) -> Any:
            return produce(side, topic, batch(count, producer_id=producer, producer_epoch=epoch,
                                              base_sequence=seq))

        out = {"init": init, "first": send(0, 2), "duplicate": send(0, 2), "next": send(2),
               "gap": send(5), "old": send(1), "new epoch, not 0": send(3, epoch=1),
               "new epoch": send(0, epoch=1), "fenced epoch": send(1, epoch=0),
               "unknown producer": send(7, producer=pid + 1000),
               "unknown producer at 0": send(0, producer=pid + 1001)}
        out["fetch"] = consume(side, topic)
        return out

    ours, kafka = pair.run(scenario)
    without_duplicate_append_time(kafka, ["duplicate"])
    assert_same(ours, kafka)
    codes = {k: partition_answer(v)["error_code"] for k, v in ours.items()
             if k not in ("init", "fetch")}
    assert codes["duplicate"] == "none" and partition_answer(ours["duplicate"])["base_offset"] == 0
    assert codes["gap"] == codes["old"] == "out_of_order_sequence_number"
    assert codes["fenced epoch"] == "invalid_producer_epoch"


# -- transactions -----------------------------------------------------------------------------


class Txn:
    """One transactional producer's raw requests."""

    def __init__(self, side: Side, transactional_id: str) -> None:
        self.side, self.id = side, transactional_id
        self.coordinator = find_coordinator(side, transactional_id, 1)
        self.init = init_producer_id(side, transactional_id)
        self.pid, self.epoch = self.init["producer_id"], self.init["producer_epoch"]

    def add(self, topic: str, epoch: int | None = None, settle: bool = False) -> Any:
        body = {"v3_and_below_transactional_id": self.id, "v3_and_below_producer_id": self.pid,
                "v3_and_below_producer_epoch": self.epoch if epoch is None else epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}
        if not settle:
            return self.side.call(ADD_PARTITIONS_TO_TXN, body)
        # Kafka writes markers after answering EndTxn; until then: CONCURRENT_TRANSACTIONS.
        return self.side.poll(ADD_PARTITIONS_TO_TXN, body, lambda a: a[
            "results_by_topic_v3_and_below"][0]["results_by_partition"][0][
            "partition_error_code"] != "concurrent_transactions")

    def send(self, topic: str, seq: int, count: int, epoch: int | None = None) -> Any:
        data = batch(count, producer_id=self.pid, producer_epoch=self.epoch if epoch is None
                     else epoch, base_sequence=seq, attributes=ATTR_TRANSACTIONAL)
        return produce(self.side, topic, data, transactional_id=self.id)

    def end(self, commit: bool, epoch: int | None = None, pid: int | None = None) -> Any:
        return self.side.call(END_TXN, {
            "transactional_id": self.id, "producer_id": self.pid if pid is None else pid,
            "producer_epoch": self.epoch if epoch is None else epoch, "committed": commit})


def _settled_fetch(side: Side, topic: str, end: int) -> None:
    """Until the last marker is in the log (Kafka writes markers after answering EndTxn)."""
    body = {"replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 1, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    side.poll(FETCH, body, lambda a: a["responses"][0]["partitions"][0][
        "last_stable_offset"] == end)


def test_transaction_abort_then_commit_and_read_committed(pair: Pair) -> None:
    topic, transactional_id = unique(), unique("txn")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        txn = Txn(side, transactional_id)
        out = {"coordinator": txn.coordinator, "init": txn.init}
        out["add"] = txn.add(topic)
        out["produce"] = txn.send(topic, 0, 3)
        out["abort"] = txn.end(False)
        out["add again"] = txn.add(topic, settle=True)
        out["produce again"] = txn.send(topic, 3, 2)
        out["commit"] = txn.end(True)
        _settled_fetch(side, topic, 7)
        out["plain"] = produce(side, topic, batch())
        out["read_committed"] = consume(side, topic, isolation_level=1)
        out["read_uncommitted"] = consume(side, topic, isolation_level=0)
        out["latest committed"] = list_offsets(side, topic, LATEST, isolation_level=1)
        return out

    ours = _same_without_marker_times(pair, scenario, ["read_committed", "read_uncommitted"])
    assert ours["read_committed"]["aborted_transactions"] == [
        {"producer_id": "<producer-id>", "first_offset": 0}]
    assert [b["base_offset"] for b in ours["read_committed"]["batches"]] == [0, 3, 4, 6, 7]


def _same_without_marker_times(pair: Pair, scenario: Any, fetch_keys: list[str]) -> Any:
    """Markers are stamped with the coordinator's clock: their timestamps are masked."""
    ours, kafka = pair.run(scenario)
    for answers in (ours, kafka):
        for key in fetch_keys:
            for entry in answers[key]["batches"]:
                if entry["control"]:
                    entry["records"] = [(o, k, v, "<time>") for o, k, v, _t in entry["records"]]
    assert_same(ours, kafka)
    return ours


def test_transaction_fencing(pair: Pair) -> None:
    topic, transactional_id = unique(), unique("txn")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        old = Txn(side, transactional_id)
        old.add(topic)
        old.send(topic, 0, 1)
        new = Txn(side, old.id)  # bumps the epoch, aborting the open transaction
        out = {"new init": new.init, "old add": old.add(topic), "old end": old.end(True),
               "old produce": old.send(topic, 1, 1)}
        out["new add"] = new.add(topic, settle=True)
        out["future epoch end"] = new.end(True, epoch=new.epoch + 5)
        out["wrong producer end"] = new.end(True, pid=new.pid + 77)
        out["new end"] = new.end(True)
        return out

    ours, kafka = pair.run(scenario)
    # docs/kafka-differences.md "Transactions": fencing an open transaction bumps the epoch
    # once here (the abort is finished before answering), twice in Kafka (once for the abort
    # markers, once more when the retried InitProducerId completes).
    assert (ours["new init"]["producer_epoch"], kafka["new init"]["producer_epoch"]) == (1, 2)
    kafka["new init"]["producer_epoch"] = 1
    assert_same(ours, kafka)
    assert ours["old end"]["error_code"] == "producer_fenced"


def test_transactional_produce_without_add_partitions(pair: Pair) -> None:
    topic, transactional_id = unique(), unique("txn")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        txn = Txn(side, transactional_id)
        return txn.send(topic, 0, 1)

    pair.check(scenario)


# -- group offsets ----------------------------------------------------------------------------


def _join(side: Side, group: str, topic: str) -> tuple[str, int]:
    """A one-member classic group on ``topic``; returns (member id, generation)."""
    find_coordinator(side, group)
    body = {"group_id": group, "session_timeout": 30000, "rebalance_timeout": 30000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}
    # Kafka may still be loading the group's __consumer_offsets partition: ask again.
    first = side.poll(JOIN_GROUP, body, lambda a: a["error_code"] not in SETTLING)
    if first["error_code"] == "member_id_required":  # KIP-394: join again with the id
        first = side.call(JOIN_GROUP, {**body, "member_id": first["member_id"]})
    assert first["error_code"] == "none", first
    member, generation = first["member_id"], first["generation_id"]
    synced = side.call(SYNC_GROUP, {"group_id": group, "generation_id": generation,
                                    "member_id": member, "group_instance_id": None,
                                    "protocol_type": "consumer", "protocol_name": "range",
                                    "assignments": [{"member_id": member, "assignment": b""}]})
    assert synced["error_code"] == "none", synced
    return member, generation


def _commit(side: Side, group: str, topic: str, generation: int, member: str,
            offset: int = 5) -> Any:
    return side.call(OFFSET_COMMIT, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": "m"}]}]})


def _fetch_offsets(side: Side, group: str, topic: str) -> Any:
    return side.call(OFFSET_FETCH, {"groups": [{"group_id": group, "member_id": None,
                                                "member_epoch": -1, "topics": [
                                                    {"name": topic, "partition_indexes": [0]}]}],
                                    "require_stable": False})


def test_offset_commit_and_fetch_with_bad_generations(pair: Pair) -> None:
    topic, simple, group = unique(), unique("simple"), unique("group")

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        find_coordinator(side, simple)
        find_coordinator(side, simple + "-x")
        out = {"simple commit": _commit(side, simple, topic, -1, ""),
               "simple fetch": _fetch_offsets(side, simple, topic),
               "simple with generation": _commit(side, simple + "-x", topic, 3, "someone")}
        member, generation = _join(side, group, topic)
        out["good"] = _commit(side, group, topic, generation, member, 7)
        out["old generation"] = _commit(side, group, topic, generation - 1, member)
        out["new generation"] = _commit(side, group, topic, generation + 1, member)
        out["unknown member"] = _commit(side, group, topic, generation, "nobody")
        out["no generation"] = _commit(side, group, topic, -1, "")
        out["fetch"] = _fetch_offsets(side, group, topic)
        out["unknown topic"] = _fetch_offsets(side, group, topic + "-missing")
        return out

    answers = pair.check(scenario)
    assert answers["fetch"]["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 7


def test_offset_delete(pair: Pair) -> None:
    topic, simple, active, nogroup = unique(), unique("simple"), unique("group"), unique("no")

    def delete(side: Side, group: str) -> Any:
        return side.call(OFFSET_DELETE, {"group_id": group, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0}]}]})

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        find_coordinator(side, simple)
        out = {"unknown group": delete(side, nogroup)}
        _commit(side, simple, topic, -1, "")
        out["simple"] = delete(side, simple)
        out["after"] = _fetch_offsets(side, simple, topic)
        member, generation = _join(side, active, topic)
        _commit(side, active, topic, generation, member)
        out["empty protocol"] = delete(side, active)
        return out

    pair.check(scenario)


# -- configs ----------------------------------------------------------------------------------


def describe(side: Side, resource_type: int, name: str, keys: list[str] | None) -> Any:
    return side.call(DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": False, "include_documentation": False})


def alter(side: Side, resource_type: int, name: str, changes: list[tuple[str, int, str | None]],
          validate_only: bool = False) -> Any:
    return side.call(INCREMENTAL_ALTER_CONFIGS, {"resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in changes]}],
        "validate_only": validate_only})


TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def test_topic_configs(pair: Pair) -> None:
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return {
            "describe": describe(side, TOPIC, topic, ["retention.ms", "cleanup.policy", "nope"]),
            "missing": describe(side, TOPIC, topic + "-missing", None),
            "set": alter(side, TOPIC, topic, [("retention.ms", SET, "1000")]),
            "bad value": alter(side, TOPIC, topic, [("retention.ms", SET, "abc")]),
            "unknown name": alter(side, TOPIC, topic, [("no.such", SET, "1")]),
            "delete": alter(side, TOPIC, topic, [("retention.ms", DELETE, None)]),
            "append": alter(side, TOPIC, topic, [("cleanup.policy", APPEND, "compact")]),
            "append to a number": alter(side, TOPIC, topic, [("retention.ms", APPEND, "5")]),
            "subtract": alter(side, TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")]),
            "missing topic": alter(side, TOPIC, topic + "-missing", [("retention.ms", SET, "1")]),
            "after": describe(side, TOPIC, topic, ["retention.ms", "cleanup.policy"]),
        }

    pair.check(scenario)


def test_message_format_version_is_a_legacy_topic_config(pair: Pair) -> None:
    """docs/kafka-differences.md "Topic configs": Kafka 4 removed it; we accept it as 3.x did."""
    topic = unique()

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        return alter(side, TOPIC, topic, [("message.format.version", SET, "3.0-IV1")])

    ours, kafka = pair.run(scenario)
    assert ours["responses"][0]["error_code"] == "none"
    assert kafka["responses"][0]["error_code"] == "invalid_config"


BROKER_KEYS = ["message.max.bytes", "num.partitions", "auto.create.topics.enable", "broker.id",
               "node.id", "log.dirs", "log.segment.bytes", "group.initial.rebalance.delay.ms"]


def test_broker_configs(pair: Pair) -> None:
    def scenario(side: Side) -> Any:
        return {
            "describe": describe(side, BROKER, "0", BROKER_KEYS),
            "other broker": describe(side, BROKER, "7", ["num.partitions"]),
            "read-only": alter(side, BROKER, "0", [("log.dirs", SET, "/tmp/x")]),
            "read-only 2": alter(side, BROKER, "0", [("num.partitions", SET, "3")], True),
            "dynamic": alter(side, BROKER, "0", [("log.retention.ms", SET, "1000")], True),
            "cluster default": alter(side, BROKER, "", [("log.retention.ms", SET, "1")], True),
        }

    ours, kafka = pair.run(scenario)
    for answers in (ours, kafka):
        for entry in answers["describe"]["results"][0]["configs"]:
            if entry["name"] == "log.dirs":
                entry["value"] = "<data dir>"
            # Static (set in server.properties) or default depends on how each was started.
            if entry["config_source"] in (4, 5):
                entry["config_source"] = "<static or default>"
    assert_same(ours, kafka)


def test_broker_config_differences(pair: Pair) -> None:
    """docs/kafka-differences.md "Broker configs": Kafka reports log.retention.ms as null when
    only its hours default applies (we report the effective milliseconds), and stores unknown
    broker config names for plugins where we refuse them."""
    def scenario(side: Side) -> Any:
        return {"retention": describe(side, BROKER, "0", ["log.retention.ms"]),
                "unknown": alter(side, BROKER, "0", [("no.such", SET, "1")], True)}

    ours, kafka = pair.run(scenario)
    assert ours["retention"]["results"][0]["configs"][0]["value"] == "604800000"
    assert kafka["retention"]["results"][0]["configs"][0]["value"] is None
    assert ours["unknown"]["responses"][0]["error_code"] == "invalid_config"
    assert kafka["unknown"]["responses"][0]["error_code"] == "none"


# -- ListOffsets and DeleteRecords ------------------------------------------------------------


def test_list_offsets_by_time_and_delete_records(pair: Pair) -> None:
    topic = unique()
    stamps = [300, 100, 500, 500, 200]

    def delete_records(side: Side, offset: int, partition: int = 0) -> Any:
        return side.call(DELETE_RECORDS, {"topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "offset": offset}]}], "timeout": 30000})

    def scenario(side: Side) -> Any:
        create_topic(side, topic)
        empty = {"max": list_offsets(side, topic, MAX_TIMESTAMP),
                 "earliest": list_offsets(side, topic, EARLIEST)}
        produce(side, topic, build_batch([Record(b"k", b"v", t) for t in stamps[:3]]))
        produce(side, topic, build_batch([Record(b"k", b"v", t) for t in stamps[3:]]))
        out = {"empty": empty}
        for label, when in [("max", MAX_TIMESTAMP), ("earliest", EARLIEST), ("latest", LATEST),
                            ("at 150", 150), ("at 500", 500), ("after all", 501)]:
            out[label] = list_offsets(side, topic, when)
        out["delete 2"] = delete_records(side, 2)
        out["earliest after"] = list_offsets(side, topic, EARLIEST)
        out["delete beyond"] = delete_records(side, 99)
        out["delete to end"] = delete_records(side, -1)
        out["delete backwards"] = delete_records(side, 1)
        out["unknown partition"] = delete_records(side, 0, partition=3)
        out["fetch below start"] = fetch(side, topic, offset=0)
        out["max after delete"] = list_offsets(side, topic, MAX_TIMESTAMP)
        return out

    answers = pair.check(scenario)
    assert partition_answer(answers["max"])["offset"] == 2
