"""Single message transforms (SMTs) and predicates, with Kafka's names and config keys.

:data:`TRANSFORMS` and :data:`PREDICATES` map every accepted name to a class: the short name
(``InsertField$Value``, ``TopicNameMatches``), Kafka's class name
(``org.apache.kafka.connect.transforms.InsertField$Value``) and the Python class name
(``InsertFieldValue``). :class:`TransformationChain` builds a connector's chain from its config.
"""

from __future__ import annotations

from connect.transforms.base import Predicate, Transformation
from connect.transforms.cast import Cast, CastKey, CastValue
from connect.transforms.chain import TransformationChain, TransformStage, resolve_class
from connect.transforms.fields import (
    ExtractField,
    ExtractFieldKey,
    ExtractFieldValue,
    Flatten,
    FlattenKey,
    FlattenValue,
    HoistField,
    HoistFieldKey,
    HoistFieldValue,
    InsertField,
    InsertFieldKey,
    InsertFieldValue,
    MaskField,
    MaskFieldKey,
    MaskFieldValue,
    ReplaceField,
    ReplaceFieldKey,
    ReplaceFieldValue,
    SetSchemaMetadata,
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
    ValueToKey,
)
from connect.transforms.headers import (
    DropHeaders,
    HeaderFrom,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
)
from connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connect.transforms.routing import Filter, RegexRouter, TimestampRouter
from connect.transforms.timestamp_converter import (
    TimestampConverter,
    TimestampConverterKey,
    TimestampConverterValue,
)

_TRANSFORM_CLASSES: list[type] = [
    CastKey, CastValue, DropHeaders, ExtractFieldKey, ExtractFieldValue, Filter, FlattenKey,
    FlattenValue, HeaderFromKey, HeaderFromValue, HoistFieldKey, HoistFieldValue,
    InsertFieldKey, InsertFieldValue, InsertHeader, MaskFieldKey, MaskFieldValue, RegexRouter,
    ReplaceFieldKey, ReplaceFieldValue, SetSchemaMetadataKey, SetSchemaMetadataValue,
    TimestampConverterKey, TimestampConverterValue, TimestampRouter, ValueToKey,
]
_PREDICATE_CLASSES: list[type] = [HasHeaderKey, RecordIsTombstone, TopicNameMatches]


def _registry(classes: list[type]) -> dict[str, type]:
    out: dict[str, type] = {}
    for cls in classes:
        kafka_name: str = cls.KAFKA_NAME  # type: ignore[attr-defined]
        out[kafka_name] = cls
        out[kafka_name.rpartition(".")[2]] = cls
        out.setdefault(cls.__name__, cls)
    return out


#: Every accepted transformation name -> class.
TRANSFORMS: dict[str, type] = _registry(_TRANSFORM_CLASSES)
#: Every accepted predicate name -> class.
PREDICATES: dict[str, type] = _registry(_PREDICATE_CLASSES)

__all__ = [
    "PREDICATES", "TRANSFORMS", "Cast", "CastKey", "CastValue", "DropHeaders", "ExtractField",
    "ExtractFieldKey", "ExtractFieldValue", "Filter", "Flatten", "FlattenKey", "FlattenValue",
    "HasHeaderKey", "HeaderFrom", "HeaderFromKey", "HeaderFromValue", "HoistField",
    "HoistFieldKey", "HoistFieldValue", "InsertField", "InsertFieldKey", "InsertFieldValue",
    "InsertHeader", "MaskField", "MaskFieldKey", "MaskFieldValue", "Predicate",
    "RecordIsTombstone", "RegexRouter", "ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue",
    "SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue", "TimestampConverter",
    "TimestampConverterKey", "TimestampConverterValue", "TimestampRouter", "TopicNameMatches",
    "Transformation", "TransformationChain", "TransformStage", "ValueToKey", "resolve_class",
]
