"""Converters: byte formats identical to Kafka's (JsonConverter envelopes as Jackson writes them)."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import pytest

from connect.converters import (
    CONVERTERS,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    JsonConverter,
    LongConverter,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
)
from connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Timestamp,
)
from streams.config import ConfigError


def json_converter(**configs) -> JsonConverter:
    conv = JsonConverter()
    conv.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return conv


def test_registry_accepts_short_and_kafka_names():
    assert CONVERTERS["JsonConverter"] is JsonConverter
    assert CONVERTERS["org.apache.kafka.connect.json.JsonConverter"] is JsonConverter
    assert CONVERTERS["org.apache.kafka.connect.storage.StringConverter"] is StringConverter
    assert CONVERTERS["org.apache.kafka.connect.converters.ByteArrayConverter"] is ByteArrayConverter
    assert CONVERTERS["org.apache.kafka.connect.converters.LongConverter"] is LongConverter
    assert CONVERTERS["org.apache.kafka.connect.storage.SimpleHeaderConverter"] is \
        SimpleHeaderConverter


# -- String / ByteArray / numbers ---------------------------------------------------------------
def test_string_converter_round_trip_and_null():
    conv = StringConverter()
    conv.configure({}, False)
    assert conv.from_connect_data("t", Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert conv.from_connect_data("t", None, None) is None
    assert conv.from_connect_data("t", None, 42) == b"42"
    assert conv.from_connect_data("t", None, True) == b"true"
    assert conv.to_connect_data("t", b"abc") == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "abc")
    assert conv.to_connect_data("t", None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
    latin = StringConverter()
    latin.configure({"converter.encoding": "latin-1"}, False)
    assert latin.from_connect_data("t", None, "é") == b"\xe9"
    with pytest.raises(DataException):
        conv.to_connect_data("t", b"\xff\xfe\xfd")
    with pytest.raises(ConfigError):
        StringConverter().configure({"converter.encoding": "nope"}, False)


def test_byte_array_converter_accepts_only_bytes():
    conv = ByteArrayConverter()
    conv.configure({}, True)
    assert conv.from_connect_data("t", Schema.BYTES_SCHEMA, b"\x00\x01") == b"\x00\x01"
    assert conv.from_connect_data("t", None, None) is None
    assert conv.to_connect_data("t", b"x") == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b"x")
    with pytest.raises(DataException):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
    with pytest.raises(DataException):
        conv.from_connect_data("t", None, "x")


@pytest.mark.parametrize(
    ("cls", "value", "wire", "schema"),
    [
        (ShortConverter, 258, b"\x01\x02", Schema.OPTIONAL_INT16_SCHEMA),
        (IntegerConverter, -2, b"\xff\xff\xff\xfe", Schema.OPTIONAL_INT32_SCHEMA),
        (LongConverter, 1, b"\x00" * 7 + b"\x01", Schema.OPTIONAL_INT64_SCHEMA),
        (FloatConverter, 1.5, struct.pack(">f", 1.5), Schema.OPTIONAL_FLOAT32_SCHEMA),
        (DoubleConverter, 0.1, struct.pack(">d", 0.1), Schema.OPTIONAL_FLOAT64_SCHEMA),
    ],
)
def test_number_converters_use_kafka_big_endian_formats(cls, value, wire, schema):
    conv = cls()
    conv.configure({}, False)
    assert conv.from_connect_data("t", schema, value) == wire
    assert conv.to_connect_data("t", wire) == SchemaAndValue(schema, value)
    assert conv.from_connect_data("t", schema, None) is None
    assert conv.to_connect_data("t", None) == SchemaAndValue(schema, None)
    with pytest.raises(DataException):
        conv.to_connect_data("t", wire + b"\x00")
    with pytest.raises(DataException):
        conv.from_connect_data("t", schema, "not a number")


# -- JsonConverter with schemas -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (Schema.BOOLEAN_SCHEMA, True, '{"schema":{"type":"boolean","optional":false},"payload":true}'),
        (Schema.INT8_SCHEMA, 12, '{"schema":{"type":"int8","optional":false},"payload":12}'),
        (Schema.INT64_SCHEMA, 4398046511104,
         '{"schema":{"type":"int64","optional":false},"payload":4398046511104}'),
        (Schema.FLOAT32_SCHEMA, 12.34, '{"schema":{"type":"float","optional":false},"payload":12.34}'),
        (Schema.FLOAT64_SCHEMA, 1.0, '{"schema":{"type":"double","optional":false},"payload":1.0}'),
        (Schema.FLOAT64_SCHEMA, 1e10, '{"schema":{"type":"double","optional":false},"payload":1.0E10}'),
        (Schema.BYTES_SCHEMA, b"test-string",
         '{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}'),
        (Schema.STRING_SCHEMA, "foo-bar-baz",
         '{"schema":{"type":"string","optional":false},"payload":"foo-bar-baz"}'),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3],
         '{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},'
         '"payload":[1,2,3]}'),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"key1": 12},
         '{"schema":{"type":"map","keys":{"type":"string","optional":false},'
         '"values":{"type":"int32","optional":false},"optional":false},"payload":{"key1":12}}'),
        (SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 12, 2: 15},
         '{"schema":{"type":"map","keys":{"type":"int32","optional":false},'
         '"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}'),
        (Schema.OPTIONAL_STRING_SCHEMA, None,
         '{"schema":{"type":"string","optional":true},"payload":null}'),
    ],
)
def test_json_envelope_bytes_match_kafka(schema, value, expected):
    conv = json_converter()
    out = conv.from_connect_data("topic", schema, value)
    assert out == expected.encode()
    back = conv.to_connect_data("topic", out)
    assert back.schema == schema
    assert back.value == pytest.approx(value) if isinstance(value, float) else back.value == value


def test_json_struct_envelope_with_metadata_is_byte_exact():
    schema = (SchemaBuilder.struct().name("com.example.Page").version(1).doc("a page view")
              .field("user", Schema.STRING_SCHEMA)
              .field("views", SchemaBuilder.int32().optional().default_value(0).build())
              .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
              .build())
    value = Struct(schema).put("user", "ann").put("tags", ["a"])
    conv = json_converter()
    out = conv.from_connect_data("pages", schema, value)
    assert out == (
        b'{"schema":{"type":"struct","fields":['
        b'{"type":"string","optional":false,"field":"user"},'
        b'{"type":"int32","optional":true,"default":0,"field":"views"},'
        b'{"type":"array","items":{"type":"string","optional":false},"optional":true,'
        b'"field":"tags"}],'
        b'"optional":false,"name":"com.example.Page","version":1,"doc":"a page view"},'
        b'"payload":{"user":"ann","views":0,"tags":["a"]}}'
    )
    back = conv.to_connect_data("pages", out)
    assert back.schema == schema
    assert back.value == Struct(schema).put("user", "ann").put("views", 0).put("tags", ["a"])


def test_json_null_with_schema_is_an_envelope_not_a_tombstone():
    conv = json_converter()
    assert conv.from_connect_data("t", None, None) is None  # tombstone only without schema
    assert conv.from_connect_data("t", Schema.OPTIONAL_INT32_SCHEMA, None) == \
        b'{"schema":{"type":"int32","optional":true},"payload":null}'
    assert conv.to_connect_data("t", None) == SchemaAndValue.NULL
    with pytest.raises(DataException):
        conv.from_connect_data("t", Schema.INT32_SCHEMA, None)  # required, no default


def test_json_schemaless_value_with_schemas_enabled_has_null_schema():
    conv = json_converter()
    out = conv.from_connect_data("t", None, {"a": 1, "b": [True, None], "c": 2.5})
    assert out == b'{"schema":null,"payload":{"a":1,"b":[true,null],"c":2.5}}'
    assert conv.to_connect_data("t", out) == SchemaAndValue(None, {"a": 1, "b": [True, None],
                                                                   "c": 2.5})


def test_json_logical_types():
    conv = json_converter()
    dec = Decimal.schema(2)
    out = conv.from_connect_data("t", dec, decimal.Decimal("1.56"))
    assert out == (b'{"schema":{"type":"bytes","optional":false,'
                   b'"name":"org.apache.kafka.connect.data.Decimal","version":1,'
                   b'"parameters":{"scale":"2"}},"payload":"AJw="}')
    assert conv.to_connect_data("t", out).value == decimal.Decimal("1.56")
    numeric = json_converter(decimal_format="NUMERIC")
    out = numeric.from_connect_data("t", dec, decimal.Decimal("1.56"))
    assert out.endswith(b'"payload":1.56}')
    assert numeric.to_connect_data("t", out).value == decimal.Decimal("1.56")
    out = conv.from_connect_data("t", Date.SCHEMA, dt.date(1997, 5, 19))
    assert out == (b'{"schema":{"type":"int32","optional":false,'
                   b'"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10000}')
    assert conv.to_connect_data("t", out).value == dt.date(1997, 5, 19)
    ts = dt.datetime(2017, 3, 5, tzinfo=dt.UTC)
    out = conv.from_connect_data("t", Timestamp.SCHEMA, ts)
    assert out.endswith(b'"payload":1488672000000}')
    assert conv.to_connect_data("t", out).value == ts


def test_json_reads_envelopes_written_by_kafka():
    conv = json_converter()
    kafka_bytes = (b'{"schema": {"type": "struct", "fields": [{"type": "int32", "optional": false, '
                   b'"field": "id"}, {"type": "string", "optional": true, "field": "name"}], '
                   b'"optional": false, "name": "customers.Value"}, '
                   b'"payload": {"id": 1001, "name": "Sally"}}')
    result = conv.to_connect_data("customers", kafka_bytes)
    assert result.schema.name == "customers.Value"
    assert result.value.get("id") == 1001 and result.value.get("name") == "Sally"


def test_json_envelope_errors_are_clear():
    conv = json_converter()
    with pytest.raises(DataException, match="schemas.enable=false"):
        conv.to_connect_data("t", b'{"a": 1}')
    with pytest.raises(DataException, match="serialization error"):
        conv.to_connect_data("t", b"{not json")
    with pytest.raises(DataException, match="Unknown schema type"):
        conv.to_connect_data("t", b'{"schema":{"type":"uuid"},"payload":"x"}')
    with pytest.raises(DataException):
        conv.to_connect_data("t", b'{"schema":{"type":"int32"},"payload":"x"}')
    with pytest.raises(DataException, match="Mismatching schema"):
        other = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
        mine = SchemaBuilder.struct().field("y", Schema.INT32_SCHEMA).build()
        conv.from_connect_data("t", mine, Struct(other).put("x", 1))


def test_json_without_schemas_is_plain_json():
    conv = json_converter(schemas_enable="false")
    assert conv.from_connect_data("t", None, {"a": "b", "n": [1, 2]}) == b'{"a":"b","n":[1,2]}'
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    assert conv.from_connect_data("t", schema, Struct(schema).put("id", 5)) == b'{"id":5}'
    assert conv.to_connect_data("t", b'{"a": 1.5, "b": 2}') == SchemaAndValue(None, {"a": 1.5,
                                                                                      "b": 2})
    assert conv.to_connect_data("t", b'"text"') == SchemaAndValue(None, "text")
    assert conv.to_connect_data("t", None) == SchemaAndValue.NULL
    assert conv.from_connect_data("t", None, None) is None
    assert conv.from_connect_data("t", Schema.OPTIONAL_STRING_SCHEMA, None) == b"null"


def test_json_non_ascii_and_control_characters_like_jackson():
    conv = json_converter(schemas_enable=False)
    assert conv.from_connect_data("t", None, "é\n\x01\"") == '"é\\n\\u0001\\""'.encode()


def test_json_bad_config_is_a_config_error():
    with pytest.raises(ConfigError):
        json_converter(schemas_enable="maybe")
    with pytest.raises(ConfigError):
        json_converter(decimal_format="HEX")


# -- headers ------------------------------------------------------------------------------------
def test_simple_header_converter_round_trips_typed_values():
    conv = SimpleHeaderConverter()
    conv.configure({})
    assert conv.from_connect_header("t", "h", Schema.STRING_SCHEMA, "abc") == b"abc"
    assert conv.from_connect_header("t", "h", Schema.INT32_SCHEMA, 42) == b"42"
    assert conv.from_connect_header("t", "h", Schema.BOOLEAN_SCHEMA, True) == b"true"
    assert conv.from_connect_header("t", "h", None, None) is None
    assert conv.to_connect_header("t", "h", b"abc") == SchemaAndValue(Schema.STRING_SCHEMA, "abc")
    assert conv.to_connect_header("t", "h", b"42") == SchemaAndValue(Schema.INT8_SCHEMA, 42)
    assert conv.to_connect_header("t", "h", b"40000") == SchemaAndValue(Schema.INT32_SCHEMA, 40000)
    assert conv.to_connect_header("t", "h", b"true") == SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
    assert conv.to_connect_header("t", "h", b"1.5") == SchemaAndValue(Schema.FLOAT32_SCHEMA, 1.5)
    assert conv.to_connect_header("t", "h", None) == SchemaAndValue(None, None)
    assert conv.to_connect_header("t", "h", b"[1,2]").value == [1, 2]


def test_value_converters_also_convert_headers():
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    assert conv.from_connect_header("t", "h", None, {"a": 1}) == b'{"a":1}'
    assert conv.to_connect_header("t", "h", b'{"a":1}').value == {"a": 1}


def test_json_schemaless_edge_cases_match_jackson():
    conv = json_converter(schemas_enable=False)
    assert conv.from_connect_data("t", None, {"big": 1e10, "small": 0.0001}) == \
        b'{"big":1.0E10,"small":1.0E-4}'
    assert conv.from_connect_data("t", None, {1: "a", 2: "b"}) == b'[[1,"a"],[2,"b"]]'
    assert conv.from_connect_data("t", None, {"b": b"\x00"}) == b'{"b":"AA=="}'
    assert conv.from_connect_data("t", None, {"c": "\x1f"}) == b'{"c":"\\u001F"}'
