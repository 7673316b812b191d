"""Topic configs through IncrementalAlterConfigs and AlterConfigs, as admin clients send them."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)


def described(admin: AdminClient, topic: str) -> dict[str, str]:
    """The topic's own configs (DYNAMIC_TOPIC_CONFIG)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(15)
    return {name: entry.value for name, entry in entries.items()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def test_min_insync_replicas_is_a_cluster_default_as_in_kafka_4(broker) -> None:
    """Kafka 4.1+ reports min.insync.replicas as a dynamic cluster default (KIP-966's record),
    not as a default, until the topic sets its own (confluent-kafka's suite expects it)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("isr", 1)])["isr"].result(15)
    resource = ConfigResource(ResourceType.TOPIC, "isr")
    entry = admin.describe_configs([resource])[resource].result(15)["min.insync.replicas"]
    assert (entry.value, entry.is_default, entry.source) == (
        "1", False, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    from reference.wire import Connection  # confluent-kafka refuses a BROKER resource ""

    with Connection(broker.bootstrap) as conn:
        cluster = conn.send(32, 4, {"resources": [
            {"resource_type": 4, "resource_name": "", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
    assert cluster is not None
    assert [(c["name"], c["value"], c["config_source"])
            for c in cluster["results"][0]["configs"]] == [("min.insync.replicas", "1", 3)]
    change = ConfigResource(ResourceType.TOPIC, "isr", incremental_configs=[ConfigEntry(
        "min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(15)
    entry = admin.describe_configs([resource])[resource].result(15)["min.insync.replicas"]
    assert (entry.value, entry.source) == ("2", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def test_incremental_set_append_subtract_delete(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("cfg", 1, config={"retention.ms": "60000"})])["cfg"].result(15)

    def alter(*entries: ConfigEntry) -> None:
        resource = ConfigResource(ResourceType.TOPIC, "cfg", incremental_configs=list(entries))
        admin.incremental_alter_configs([resource])[resource].result(15)

    alter(ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET))
    alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    assert described(admin, "cfg") == {"retention.ms": "60000", "segment.ms": "3600000",
                                       "cleanup.policy": "delete,compact"}
    alter(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
          ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    assert described(admin, "cfg") == {"segment.ms": "3600000", "cleanup.policy": "compact"}
    # the log picked the new segment.ms up
    assert broker.broker.topics.partition("cfg", 0).config.segment_ms == 3_600_000


def test_invalid_value_is_rejected_and_nothing_changes(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("cfg2", 1)])["cfg2"].result(15)
    resource = ConfigResource(ResourceType.TOPIC, "cfg2", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="retention.ms"):
        admin.incremental_alter_configs([resource])[resource].result(15)
    assert described(admin, "cfg2") == {}
