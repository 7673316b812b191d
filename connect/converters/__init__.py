"""Built-in converters, found by short name or by Kafka class name in :data:`CONVERTERS`.

``CONVERTERS["JsonConverter"] is CONVERTERS["org.apache.kafka.connect.json.JsonConverter"]``.
Header converters (SimpleHeaderConverter, and every value converter, which also convert headers)
are in the same dict, so ``header.converter`` resolves through it too.
"""

from __future__ import annotations

from connect.converters.base import Converter, HeaderConverter
from connect.converters.header import SimpleHeaderConverter, parse_string
from connect.converters.json import JsonConverter
from connect.converters.simple import (
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    NumberConverter,
    ShortConverter,
    StringConverter,
)

_KAFKA_NAMES: dict[str, type] = {
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.converters.ShortConverter": ShortConverter,
    "org.apache.kafka.connect.converters.IntegerConverter": IntegerConverter,
    "org.apache.kafka.connect.converters.LongConverter": LongConverter,
    "org.apache.kafka.connect.converters.FloatConverter": FloatConverter,
    "org.apache.kafka.connect.converters.DoubleConverter": DoubleConverter,
    "org.apache.kafka.connect.converters.BooleanConverter": BooleanConverter,
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
}


def _registry_converters() -> dict[str, type]:
    """Confluent's schema-registry converters (their modules import fastavro/protobuf lazily)."""
    from connect.converters.avro import AvroConverter
    from connect.converters.json_schema import JsonSchemaConverter
    from connect.converters.protobuf import ProtobufConverter

    return {
        "io.confluent.connect.avro.AvroConverter": AvroConverter,
        "io.confluent.connect.json.JsonSchemaConverter": JsonSchemaConverter,
        "io.confluent.connect.protobuf.ProtobufConverter": ProtobufConverter,
    }


_KAFKA_NAMES.update(_registry_converters())

#: Every accepted converter name -> class: short names and Kafka's class names.
CONVERTERS: dict[str, type] = {
    **{cls.__name__: cls for cls in _KAFKA_NAMES.values()},
    **_KAFKA_NAMES,
}

#: Kafka class name of each built-in converter (for GET /connector-plugins).
KAFKA_CLASS_NAMES: dict[type, str] = {cls: name for name, cls in _KAFKA_NAMES.items()}

__all__ = [
    "CONVERTERS", "KAFKA_CLASS_NAMES", "BooleanConverter", "ByteArrayConverter", "Converter",
    "DoubleConverter", "FloatConverter", "HeaderConverter", "IntegerConverter", "JsonConverter",
    "LongConverter", "NumberConverter", "ShortConverter", "SimpleHeaderConverter",
    "StringConverter", "parse_string",
]
