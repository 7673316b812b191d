"""Share-group offsets admin (DescribeShareGroupOffsets 90, AlterShareGroupOffsets 91,
DeleteShareGroupOffsets 92) and GROUP config resources (IncrementalAlterConfigs 44,
AlterConfigs 33, DescribeConfigs 32): the same request sequence to our broker and to Apache
Kafka 4.4, answers compared field by field (topic order inside a describe, which Kafka takes
from a hash map, and config order are normalised).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Producer
from helpers import EmbeddedBroker, create_topics

from . import kafka
from .wire import Connection

HEARTBEAT, FETCH, METADATA, FIND_COORDINATOR, OFFSET_COMMIT, DELETE_GROUPS = 76, 78, 3, 10, 8, 42
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER = 32, 33, 44
GROUP_RESOURCE = 32


def _normal(answer: Any, tag: str, ids: dict[str, str]) -> Any:
    """Names without the run's tag, topic ids as the topic they name, lists of topics sorted."""
    if isinstance(answer, dict):
        out = {k: _normal(v, tag, ids) for k, v in answer.items() if k != "throttle_time"}
        if "topic_id" in out and out["topic_id"] is not None:
            out["topic_id"] = ids.get(out["topic_id"], "?")
        return out
    if isinstance(answer, list):
        items = [_normal(v, tag, ids) for v in answer]
        return items
    if isinstance(answer, str):
        return answer.replace(tag, "T")
    return answer


def _sorted_topics(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for group in groups:
        group["topics"].sort(key=lambda t: t["topic_name"])
    return groups


def _script(bootstrap: str, tag: str) -> dict[str, Any]:
    topic, other, share, classic = f"q-{tag}", f"r-{tag}", f"sg-{tag}", f"cg-{tag}"
    create_topics(bootstrap, {topic: 2, other: 1})
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(5):
        producer.produce(topic, b"x", partition=0)
    producer.flush()
    out: dict[str, Any] = {}
    with Connection(bootstrap) as c:
        meta = c.send(METADATA, 12, {"topics": [{"name": topic, "topic_id": None},
                                                {"name": other, "topic_id": None}],
                                     "allow_auto_topic_creation": False})
        assert meta is not None
        ids = {t["topic_id"]: t["name"].replace(tag, "T") for t in meta["topics"]}

        def send(api: int, version: int, body: dict[str, Any]) -> Any:
            return _normal(c.send(api, version, body), tag, ids)

        def describe(groups: list[tuple[str, Any]], version: int = 1) -> Any:
            answer = send(DESCRIBE_OFFSETS, version, {"groups": [
                {"group_id": g, "topics": t} for g, t in groups]})
            return _sorted_topics(answer["groups"])

        def alter(group: str, topics: list[tuple[str, list[tuple[int, int]]]]) -> Any:
            return send(ALTER_OFFSETS, 0, {"group_id": group, "topics": [
                {"topic_name": name, "partitions": [
                    {"partition_index": p, "start_offset": o} for p, o in parts]}
                for name, parts in topics]})

        def delete(group: str, topics: list[str]) -> Any:
            answer = send(DELETE_OFFSETS, 0, {"group_id": group, "topics": [
                {"topic_name": name} for name in topics]})
            # Kafka lists the deleted topics in its map's order, then the refused ones.
            answer["responses"].sort(key=lambda t: (t["error_code"] != "none", t["topic_name"]))
            return answer

        def heartbeat(member: str, epoch: int, topics: list[str] | None = None) -> Any:
            return c.send(HEARTBEAT, 1, {"group_id": share, "member_id": member,
                                         "member_epoch": epoch,
                                         "subscribed_topic_names": topics})

        for group in (share, classic):
            c.send(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        deadline = time.monotonic() + 30
        joined = heartbeat("m1", 0, [topic])
        while joined["error_code"] != "none" and time.monotonic() < deadline:
            time.sleep(0.2)
            joined = heartbeat("m1", 0, [topic])
        epoch = joined["member_epoch"]
        while not (joined.get("assignment") or {}).get("topic_partitions"):
            assert time.monotonic() < deadline, "no assignment"
            time.sleep(0.2)
            joined = heartbeat("m1", epoch)
            epoch = joined["member_epoch"]
        c.send(OFFSET_COMMIT, 8, {"group_id": classic, "generation_id_or_member_epoch": -1,
                                  "member_id": "", "topics": [{"name": topic, "partitions": [
                                      {"partition_index": 0, "committed_offset": 1}]}]})
        # Kafka writes the initial (uninitialized) state asynchronously after the assignment.
        expected = [0, 1]
        while True:
            described = describe([(share, None)])
            found = [p["partition_index"] for t in described[0]["topics"]
                     for p in t["partitions"]]
            if found == expected or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["describe_assigned"] = described
        # (A partition the topic lacks is left out: Kafka 4.4's share coordinator retries its
        # state read until the request times out.)
        out["describe_mixed"] = describe([
            (classic, None), (f"none-{tag}", None), ("", None),
            (share, [{"topic_name": topic, "partitions": [0]},
                     {"topic_name": f"nope-{tag}", "partitions": [0]}])])
        out["describe_v0"] = describe([(share, [{"topic_name": topic, "partitions": [0]}])], 0)
        out["alter_not_empty"] = alter(share, [(topic, [(0, 2)])])
        out["delete_not_empty"] = delete(share, [topic])
        out["alter_classic"] = alter(classic, [(topic, [(0, 2)])])
        out["delete_classic"] = delete(classic, [topic])
        out["alter_empty_id"] = alter("", [(topic, [(0, 2)])])
        out["delete_empty_id"] = delete("", [topic])
        out["leave"] = heartbeat("m1", -1)["error_code"]
        out["alter"] = alter(share, [(topic, [(0, 3), (1, 0), (9, 0)]),
                                     (f"nope-{tag}", [(0, 0)]), (other, [(0, 0)])])
        out["alter_duplicate"] = alter(share, [(topic, [(0, 2), (0, 3)])])
        out["alter_no_partitions"] = alter(share, [(topic, [])])
        out["describe_altered"] = describe([(share, None)])
        out["alter_negative"] = alter(share, [(other, [(0, -5)])])
        out["describe_negative"] = describe([(share, [{"topic_name": other,
                                                        "partitions": [0]}])])
        out["alter_unknown_group"] = alter(f"new-{tag}", [(topic, [(0, 4)])])
        out["describe_new_group"] = describe([(f"new-{tag}", None)])
        out["delete"] = delete(share, [f"nope-{tag}", other, topic])
        out["delete_again"] = delete(share, [topic, f"nope-{tag}", other])
        out["describe_deleted"] = describe([(share, None)])
        out["alter_reset"] = alter(share, [(topic, [(0, -1)])])
        out["describe_reset"] = describe([(share, None)])
        # A group's configs outlive DeleteGroups on Kafka 4.4 (they are cluster metadata, kept
        # until an IncrementalAlterConfigs DELETE; also after a restart), whether the group
        # was a share group, a classic one or never existed.
        for group in (f"new-{tag}", classic, f"never-{tag}"):
            out[f"configure {group}"] = send(INCREMENTAL_ALTER, 1, {
                "validate_only": False, "resources": [{
                    "resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 0,
                         "value": "earliest"}]}]})
        out["delete_group"] = send(DELETE_GROUPS, 2, {"groups_names": [f"new-{tag}"]})
        deleted = send(DELETE_GROUPS, 2, {"groups_names": [classic, f"never-{tag}"]})
        out["delete_groups"] = sorted(deleted["results"], key=lambda r: r["group_id"])
        out["describe_group_deleted"] = describe([(f"new-{tag}", None)])
        configs_after_delete = send(DESCRIBE_CONFIGS, 4, {
            "include_synonyms": False, "include_documentation": False, "resources": [
                {"resource_type": GROUP_RESOURCE, "resource_name": group,
                 "configuration_keys": ["share.auto.offset.reset"]}
                for group in (f"new-{tag}", classic, f"never-{tag}")]})
        out["configs_after_delete"] = [
            (r["resource_name"], r["error_code"],
             [(e["name"], e["value"], e["config_source"]) for e in r["configs"]])
            for r in configs_after_delete["results"]]

        # GROUP config resources
        def set_configs(group: str, changes: list[tuple[str, int, str | None]],
                        validate: bool = False) -> Any:
            return send(INCREMENTAL_ALTER, 1, {"validate_only": validate, "resources": [{
                "resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
                    {"name": n, "config_operation": op, "value": v} for n, op, v in changes]}]})

        cfg = f"cfg-{tag}"
        for name, value in (("share.auto.offset.reset", "earliest"),
                            ("share.auto.offset.reset", "bogus"),
                            ("share.auto.offset.reset", "by_duration:PT1H"),
                            ("share.auto.offset.reset", "by_duration:xx"),
                            ("share.record.lock.duration.ms", "1000"),
                            ("share.record.lock.duration.ms", "15000"),
                            ("share.isolation.level", "read_committed"),
                            ("share.isolation.level", "x"),
                            ("share.partition.max.record.locks", "50"),
                            ("share.partition.max.record.locks", "150"),
                            ("share.delivery.count.limit", "11"),
                            ("share.delivery.count.limit", "3"),
                            ("share.session.timeout.ms", "1000"),
                            ("consumer.session.timeout.ms", "50000"),
                            ("consumer.heartbeat.interval.ms", "100"),
                            ("share.renew.acknowledge.enable", "maybe"),
                            ("share.renew.acknowledge.enable", "FALSE"),
                            ("no.such.key", "1")):
            out[f"set {name}={value}"] = set_configs(cfg, [(name, 0, value)])
        out["append"] = set_configs(cfg, [("share.delivery.count.limit", 2, "3")])
        out["default_resource"] = set_configs("", [("share.auto.offset.reset", 0, "earliest")])
        out["validate_only"] = set_configs(cfg, [("share.delivery.count.limit", 0, "4")], True)
        out["delete_key"] = set_configs(cfg, [("share.session.timeout.ms", 1, None)])
        wanted = ["share.isolation.level", "share.auto.offset.reset",
                  "share.record.lock.duration.ms", "share.delivery.count.limit",
                  "share.partition.max.record.locks", "consumer.session.timeout.ms",
                  "share.session.timeout.ms", "share.renew.acknowledge.enable", "unknown.key"]
        described_configs = send(DESCRIBE_CONFIGS, 4, {
            "include_synonyms": True, "include_documentation": False,
            "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": cfg,
                           "configuration_keys": wanted}]})
        for result in described_configs["results"]:
            result["error_message"] = result["error_message"] or ""
            result["configs"].sort(key=lambda entry: entry["name"])
        out["describe_configs"] = described_configs
        out["legacy_alter"] = send(ALTER_CONFIGS, 2, {"validate_only": False, "resources": [{
            "resource_type": GROUP_RESOURCE, "resource_name": cfg, "configs": [
                {"name": "share.auto.offset.reset", "value": "earliest"}]}]})
        after_legacy = send(DESCRIBE_CONFIGS, 4, {
            "include_synonyms": False, "include_documentation": False,
            "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": cfg,
                           "configuration_keys": wanted}]})
        out["after_legacy"] = sorted((e["name"], e["value"], e["config_source"])
                                     for r in after_legacy["results"] for e in r["configs"])
    return out


def test_share_group_offsets_and_group_configs_match_kafka(
    reference_kafka: kafka.KafkaNode, bundled: EmbeddedBroker
) -> None:
    tag = uuid.uuid4().hex[:8]
    theirs = _script(reference_kafka.bootstrap, tag)
    ours = _script(bundled.bootstrap, tag)
    for key in theirs:
        assert ours[key] == theirs[key], key
    assert ours == theirs
