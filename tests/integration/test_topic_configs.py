"""Topic configs through IncrementalAlterConfigs and AlterConfigs, as admin clients send them."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)


def described(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(15)
    return {name: entry.value for name, entry in entries.items() if not entry.is_default}


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
