"""Connect data model: schemas, structs, logical types, records and headers (Kafka semantics)."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SchemaType,
    Struct,
    Time,
    Timestamp,
    infer_schema,
    value_to_string,
)
from connect.records import ConnectHeaders, Header, SinkRecord, SourceRecord, TimestampType

USER = (SchemaBuilder.struct().name("com.example.User").version(2)
        .field("id", Schema.INT64_SCHEMA)
        .field("email", Schema.OPTIONAL_STRING_SCHEMA)
        .field("age", SchemaBuilder.int32().optional().default_value(18).build())
        .build())


def test_constants_and_builder_produce_equal_schemas():
    assert SchemaBuilder.string().build() == Schema.STRING_SCHEMA
    assert SchemaBuilder.int32().optional().build() == Schema.OPTIONAL_INT32_SCHEMA
    assert Schema.STRING_SCHEMA != Schema.OPTIONAL_STRING_SCHEMA
    assert Schema.INT8_SCHEMA.type is SchemaType.INT8
    assert [f.name for f in USER.fields] == ["id", "email", "age"]
    assert USER.field("email").index == 1
    assert USER.field("missing") is None
    array = SchemaBuilder.array(Schema.STRING_SCHEMA).build()
    assert array.value_schema == Schema.STRING_SCHEMA
    mapping = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).optional().build()
    assert (mapping.key_schema, mapping.value_schema, mapping.optional) == (
        Schema.STRING_SCHEMA, Schema.INT64_SCHEMA, True)


def test_builder_rejects_duplicates_bad_defaults_and_fields_on_primitives():
    with pytest.raises(DataException):
        SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("a", Schema.INT32_SCHEMA)
    with pytest.raises(DataException):
        SchemaBuilder.int32().default_value("not an int")
    with pytest.raises(DataException):
        SchemaBuilder.string().field("a", Schema.INT32_SCHEMA)
    with pytest.raises(DataException):
        SchemaBuilder.string().name("a").name("b")


def test_schema_is_immutable():
    with pytest.raises(AttributeError):
        Schema.STRING_SCHEMA.optional = True  # type: ignore[misc]


def test_struct_put_get_default_and_validate():
    user = Struct(USER).put("id", 7)
    assert user.get("id") == 7
    assert user.get("email") is None
    assert user.get("age") == 18  # schema default
    assert user.get_without_default("age") is None
    user.validate()
    with pytest.raises(DataException):
        user.put("id", "seven")  # wrong type
    with pytest.raises(DataException):
        user.put("nope", 1)
    with pytest.raises(DataException):
        Struct(USER).validate()  # required id missing
    with pytest.raises(DataException):
        Struct(USER).put("id", 2**63)  # out of INT64 range
    assert Struct(USER).put("id", 7) == user
    assert repr(user) == "Struct{id=7,email=None,age=None}"


def test_int_ranges_are_enforced_per_type():
    s = SchemaBuilder.struct().field("b", Schema.INT8_SCHEMA).build()
    Struct(s).put("b", 127)
    with pytest.raises(DataException):
        Struct(s).put("b", 128)
    with pytest.raises(DataException):
        Struct(s).put("b", True)  # a bool is not an int8


def test_decimal_logical_type_matches_java_bigdecimal_bytes():
    schema = Decimal.schema(2)
    assert schema.name == "org.apache.kafka.connect.data.Decimal"
    assert schema.parameters == {"scale": "2"}
    assert Decimal.from_logical(schema, decimal.Decimal("1.56")) == b"\x00\x9c"
    assert Decimal.from_logical(schema, decimal.Decimal("-1.28")) == b"\x80"
    assert Decimal.from_logical(schema, decimal.Decimal("0.00")) == b"\x00"
    assert Decimal.to_logical(schema, b"\x00\x9c") == decimal.Decimal("1.56")
    with pytest.raises(DataException):
        Decimal.from_logical(schema, decimal.Decimal("1.5"))  # wrong scale


def test_date_time_timestamp_logical_types():
    assert Date.from_logical(Date.SCHEMA, dt.date(1970, 1, 11)) == 10
    assert Date.to_logical(Date.SCHEMA, 10) == dt.date(1970, 1, 11)
    assert Time.from_logical(Time.SCHEMA, dt.time(0, 0, 1, 500_000)) == 1500
    assert Time.to_logical(Time.SCHEMA, 1500) == dt.time(0, 0, 1, 500_000)
    when = dt.datetime(2017, 3, 5, 0, 0, tzinfo=dt.UTC)
    assert Timestamp.from_logical(Timestamp.SCHEMA, when) == 1488672000000
    assert Timestamp.to_logical(Timestamp.SCHEMA, 1488672000000) == when
    assert Timestamp.SCHEMA.type is SchemaType.INT64 and Date.SCHEMA.type is SchemaType.INT32
    with pytest.raises(DataException):
        Time.to_logical(Time.SCHEMA, 86_400_000)


def test_infer_schema_for_schemaless_values():
    assert infer_schema("x") == Schema.STRING_SCHEMA
    assert infer_schema(True) == Schema.BOOLEAN_SCHEMA
    assert infer_schema(1) == Schema.INT32_SCHEMA
    assert infer_schema(2**40) == Schema.INT64_SCHEMA
    assert infer_schema(1.5) == Schema.FLOAT64_SCHEMA
    assert infer_schema(b"x") == Schema.BYTES_SCHEMA
    assert infer_schema(["a", "b"]) == SchemaBuilder.array(Schema.STRING_SCHEMA).build()
    assert infer_schema(["a", 1]) is None  # mixed types: no schema
    assert infer_schema([]) is None
    assert infer_schema({"a": 1}) == SchemaBuilder.map(Schema.STRING_SCHEMA,
                                                       Schema.INT32_SCHEMA).build()
    assert infer_schema(None) is None
    assert infer_schema(Struct(USER)) is USER


def test_value_to_string_like_kafka_values():
    assert value_to_string(None, True) == "true"
    assert value_to_string(None, 1.0) == "1.0"
    assert value_to_string(None, 1e10) == "1.0E10"
    assert value_to_string(None, b"\x01\x02") == "AQI="
    assert value_to_string(None, [1, "a"]) == '[1,"a"]'
    assert value_to_string(None, {"a": 1}) == '{"a":1}'
    assert value_to_string(None, None) is None


def test_schema_and_value_null():
    assert SchemaAndValue(None, None) == SchemaAndValue.NULL


def test_headers_add_last_with_name_remove_and_retain():
    headers = ConnectHeaders().add("a", "1").add("b", 2).add("a", "3")
    assert len(headers) == 3
    assert headers.last_with_name("a") == Header("a", Schema.STRING_SCHEMA, "3")
    assert [h.value for h in headers.all_with_name("a")] == ["1", "3"]
    assert headers.last_with_name("b").schema == Schema.INT32_SCHEMA
    assert headers.last_with_name("zz") is None
    copy = headers.duplicate()
    headers.remove("a")
    assert headers.keys() == ["b"]
    assert copy.keys() == ["a", "b", "a"]
    copy.retain_latest()
    assert [(h.key, h.value) for h in copy] == [("b", 2), ("a", "3")]
    with pytest.raises(DataException):
        ConnectHeaders().add("x", "text", Schema.INT32_SCHEMA)


def test_source_record_new_record_keeps_source_partition_and_offset():
    record = SourceRecord({"filename": "f"}, {"position": 10}, "topic", None, None, None,
                          Schema.STRING_SCHEMA, "line", 5, [("h", "v")])
    moved = record.new_record("other", 1, None, "k", Schema.STRING_SCHEMA, "line", 5)
    assert isinstance(moved, SourceRecord)
    assert (moved.source_partition, moved.source_offset) == ({"filename": "f"}, {"position": 10})
    assert moved.topic == "other" and moved.kafka_partition == 1 and moved.key == "k"
    assert moved.headers == record.headers and moved.headers is not record.headers
    assert record.with_(value="x").value == "x"
    assert record.with_(value="x").source_offset == {"position": 10}


def test_sink_record_keeps_original_coordinates_through_new_record():
    record = SinkRecord("orders", 3, None, "k", None, "v", 42, timestamp=1000,
                        timestamp_type=TimestampType.CREATE_TIME)
    routed = record.new_record("orders-2024", 0, None, "k", None, "v2", 1000)
    assert isinstance(routed, SinkRecord)
    assert routed.kafka_offset == 42 and routed.timestamp_type is TimestampType.CREATE_TIME
    assert (routed.original_topic, routed.original_kafka_partition,
            routed.original_kafka_offset) == ("orders", 3, 42)
    assert record == SinkRecord("orders", 3, None, "k", None, "v", 42, 1000, "CreateTime")
    assert record != routed


def test_record_rejects_negative_timestamp():
    with pytest.raises(ValueError):
        SinkRecord("t", 0, None, None, None, None, 0, timestamp=-1)
