"""Plugin discovery by every accepted name, and ConfigDef parsing/validation (used by REST)."""

from __future__ import annotations

from importlib import metadata

import pytest

from connect import plugins
from connect.config_def import ConfigDef, ConfigException, ConfigType, Range, ValidString
from connect.file import FileStreamSinkConnector, FileStreamSourceConnector


def test_connector_names() -> None:
    for name in ("FileStreamSource", "FileStreamSourceConnector",
                 "org.apache.kafka.connect.file.FileStreamSourceConnector",
                 "connect.file.source.FileStreamSourceConnector",
                 "connect.file.source:FileStreamSourceConnector"):
        assert plugins.connector_class(name) is FileStreamSourceConnector, name
    assert plugins.connector_class("FileStreamSink") is FileStreamSinkConnector
    assert plugins.connector_type(plugins.connector_class("DataGen")) == "source"
    with pytest.raises(plugins.PluginNotFoundError, match="did you mean 'FileStreamSink'"):
        plugins.connector_class("FileStreamSinc")
    with pytest.raises(plugins.PluginNotFoundError):
        plugins.connector_class("connect.api.Task")  # a class, but not a Connector


def test_spark_sink_by_short_name() -> None:
    from connect.spark import SparkSinkConnector

    for name in ("SparkSink", "SparkSinkConnector", "connect.spark.SparkSinkConnector"):
        assert plugins.connector_class(name) is SparkSinkConnector, name
    assert plugins.connector_type(SparkSinkConnector) == "sink"


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = metadata.EntryPoint("MySink", "connect.file.sink:FileStreamSinkConnector",
                             plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "_entry_points", lambda: {"MySink": ep})
    assert plugins.connector_class("MySink") is FileStreamSinkConnector


def test_converters_and_transforms_by_kafka_name() -> None:
    assert plugins.converter_class("org.apache.kafka.connect.json.JsonConverter").__name__ == \
        "JsonConverter"
    assert plugins.converter_class("StringConverter").__name__ == "StringConverter"
    assert plugins.transform_class("org.apache.kafka.connect.transforms.InsertField$Value")
    assert plugins.predicate_class("TopicNameMatches")
    listed = {(p.class_name, p.type) for p in plugins.all_plugins()}
    assert ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter") in listed
    assert ("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink") in listed


def test_config_def_parse_and_validate() -> None:
    definition = (ConfigDef()
                  .define("host", ConfigType.STRING)
                  .define("port", ConfigType.INT, 8080, Range.between(1, 65535))
                  .define("tags", ConfigType.LIST, "")
                  .define("mode", ConfigType.STRING, "fast", ValidString(["fast", "safe"]))
                  .define("on", ConfigType.BOOLEAN, False))
    parsed = definition.parse({"host": "h", "port": "9000", "tags": "a, b", "on": "TRUE"})
    assert parsed == {"host": "h", "port": 9000, "tags": ["a", "b"], "mode": "fast", "on": True}
    values = {v.name: v for v in definition.validate({"port": "70000", "mode": "slow",
                                                      "on": "yes"})}
    assert values["host"].errors == [
        'Missing required configuration "host" which has no default value.']
    assert "at most" not in values["port"].errors[0] and "65535" in values["port"].errors[0]
    assert "fast, safe" in values["mode"].errors[0]
    assert values["on"].errors and values["tags"].errors == []
    with pytest.raises(ConfigException, match="host"):
        definition.parse({})
    with pytest.raises(ConfigException, match="defined twice"):
        definition.define("host", ConfigType.STRING)
    info = definition.config_keys()["port"].to_json()
    assert info["default_value"] == "8080" and info["type"] == "INT" and info["required"] is False
