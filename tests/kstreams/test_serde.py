"""Serdes: byte-exact with Kafka's (so Java applications read what we write), None handling,
errors that name the topic, and serde names from config files."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel

from streams import Serdes, Window, Windowed
from streams.serde import (
    IntegerSerde,
    InternalSerde,
    JsonSerde,
    LongSerde,
    SerializationError,
    StringSerde,
    resolve_serde,
)
from streams.windowing import SessionWindowedSerde, TimeWindowedSerde

# Bytes as Kafka's serializers write them (IntegerSerializer, LongSerializer, DoubleSerializer,
# StringSerializer with UTF-8, TimeWindowedSerializer, SessionWindowedSerializer).
KAFKA_BYTES = [
    (Serdes.integer(), 1, b"\x00\x00\x00\x01"),
    (Serdes.integer(), -1, b"\xff\xff\xff\xff"),
    (Serdes.integer(), 2**31 - 1, b"\x7f\xff\xff\xff"),
    (Serdes.integer(), -(2**31), b"\x80\x00\x00\x00"),
    (Serdes.long(), 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
    (Serdes.long(), -2, b"\xff\xff\xff\xff\xff\xff\xff\xfe"),
    (Serdes.long(), 2**63 - 1, b"\x7f\xff\xff\xff\xff\xff\xff\xff"),
    (Serdes.long(), 1_700_000_000_000, b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"),
    (Serdes.double(), 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
    (Serdes.double(), -2.5, b"\xc0\x04\x00\x00\x00\x00\x00\x00"),
    (Serdes.double(), 0.1, b"\x3f\xb9\x99\x99\x99\x99\x99\x9a"),
    (Serdes.double(), math.inf, b"\x7f\xf0\x00\x00\x00\x00\x00\x00"),
    (Serdes.string(), "hello", b"hello"),
    (Serdes.string(), "", b""),
    (Serdes.string(), "h\u00e9\u20ac\U0001f600", b"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
    (Serdes.bytes(), b"\x00\x01", b"\x00\x01"),
    (Serdes.json(), {"a": [1, "x"]}, b'{"a":[1,"x"]}'),
    (Serdes.json(), "caf\u00e9", b'"caf\xc3\xa9"'),
    (Serdes.windowed(Serdes.string(), 10), Windowed("k", Window(5, 15)),
     b"k\x00\x00\x00\x00\x00\x00\x00\x05"),
    (Serdes.session_windowed(Serdes.string()), Windowed("k", Window(5, 15)),
     b"k\x00\x00\x00\x00\x00\x00\x00\x0f\x00\x00\x00\x00\x00\x00\x00\x05"),
]


@pytest.mark.parametrize(("serde", "value", "data"), KAFKA_BYTES,
                         ids=[f"{s.name}-{i}" for i, (s, _, _) in enumerate(KAFKA_BYTES)])
def test_kafka_byte_format(serde, value, data) -> None:
    assert serde.serialize("t", value) == data
    assert serde.deserialize("t", data) == value


def test_double_nan_round_trips_with_javas_canonical_bits() -> None:
    data = Serdes.double().serialize("t", math.nan)
    assert data == b"\x7f\xf8\x00\x00\x00\x00\x00\x00"  # Double.doubleToLongBits(NaN)
    assert math.isnan(Serdes.double().deserialize("t", data))


def test_double_accepts_ints() -> None:
    assert Serdes.double().serialize("t", 2) == b"\x40\x00\x00\x00\x00\x00\x00\x00"


@pytest.mark.parametrize("serde", [Serdes.string(), Serdes.integer(), Serdes.long(),
                                   Serdes.double(), Serdes.bytes(), Serdes.json(),
                                   InternalSerde(), Serdes.windowed(Serdes.string())])
def test_none_is_null_both_ways(serde) -> None:
    assert serde.serialize("t", None) is None
    assert serde.deserialize("t", None) is None


def test_empty_string_is_not_null() -> None:
    assert Serdes.string().serialize("t", "") == b""
    assert Serdes.string().deserialize("t", b"") == ""


JSON_EDGE_VALUES = [
    {"a": [1, None, "\u00e9\U0001f600"], "b": {"c": True}},
    {1: "int key", 2: "another", None: "none key"},
    2**70, -(2**64), {"big": 123456789012345678901234567890},
    {"x": math.nan, "y": [math.inf, -math.inf]},
    (1, 2), 2**63 - 1, "quote \" and \\ and \n",
]


@pytest.mark.parametrize("value", JSON_EDGE_VALUES, ids=range(len(JSON_EDGE_VALUES)))
def test_json_serde_writes_and_reads_what_the_json_module_does(value) -> None:
    """orjson does the work, but where it differs (ints beyond 64 bits, NaN, non-str keys) the
    bytes and values must still be json.dumps/json.loads' (nothing silently becomes a float
    or a null)."""
    data = Serdes.json().serialize("t", value)
    assert data == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    back = Serdes.json().deserialize("t", data)
    assert repr(back) == repr(json.loads(data))


@pytest.mark.parametrize("value", [0.1, 2.5, 1e16, 1.5e16, 1e-7, 1.5e-5, 2e-10, 3e-100,
                                   -0.0, 123456.789, 5e-324, 1.7976931348623157e308])
def test_json_serde_floats_read_back_to_the_same_value(value) -> None:
    data = Serdes.json().serialize("t", {"v": value})
    assert json.loads(data)["v"] == value  # the spelling may differ from json.dumps'
    assert Serdes.json().deserialize("t", data)["v"] == value


def test_json_serde_reads_big_numbers_and_nan_literals_exactly() -> None:
    serde = Serdes.json()
    assert serde.deserialize("t", b'{"n":-123456789012345678901}') == {"n": -123456789012345678901}
    assert serde.deserialize("t", b"[12345678901234567890]") == [12345678901234567890]
    assert math.isnan(serde.deserialize("t", b'{"v":NaN}')["v"])


@pytest.mark.parametrize(("serde", "value"), [
    (Serdes.integer(), 2**31), (Serdes.integer(), "1"), (Serdes.integer(), True),
    (Serdes.long(), 2**63), (Serdes.long(), 1.5), (Serdes.string(), 5),
    (Serdes.bytes(), "text"), (Serdes.json(), {1, 2}),
])
def test_serialize_errors_name_the_topic(serde, value) -> None:
    with pytest.raises(SerializationError, match="'orders'"):
        serde.serialize("orders", value)


@pytest.mark.parametrize(("serde", "data"), [
    (Serdes.integer(), b"\x00\x01"), (Serdes.long(), b"\x00" * 4),
    (Serdes.double(), b"\x00" * 9), (Serdes.string(), b"\xff\xfe"),
    (Serdes.json(), b"{not json"), (InternalSerde(), b"?what"),
])
def test_deserialize_errors_name_the_topic_and_show_the_bytes(serde, data) -> None:
    with pytest.raises(SerializationError) as info:
        serde.deserialize("payments", data)
    assert "'payments'" in str(info.value)


def test_value_errors_from_conversion_name_the_topic() -> None:
    with pytest.raises(SerializationError, match="'orders'"):
        Serdes.integer().serialize("orders", 2**40)
    with pytest.raises(SerializationError, match="'orders'"):
        Serdes.json().serialize("orders", object())


class Order(BaseModel):
    id: int
    item: str
    price: float = 0.0


def test_pydantic_serde_round_trip_and_validation() -> None:
    serde = Serdes.pydantic(Order)
    data = serde.serialize("t", Order(id=1, item="pen", price=1.5))
    assert data == b'{"id":1,"item":"pen","price":1.5}'
    assert serde.deserialize("t", data) == Order(id=1, item="pen", price=1.5)
    assert serde.serialize("t", {"id": 2, "item": "cup"}) == b'{"id":2,"item":"cup","price":0.0}'
    with pytest.raises(SerializationError, match="'t'"):
        serde.deserialize("t", b'{"id":"x"}')
    assert repr(serde) == "Serdes.pydantic(Order)"


def test_json_serde_reads_what_jsonconverter_without_schemas_writes() -> None:
    assert JsonSerde().deserialize("t", b'{"a": 1, "b": [true, null]}') == {"a": 1,
                                                                            "b": [True, None]}


@pytest.mark.parametrize("value", [
    "text", "", b"\x00raw", 0, -(2**63), 2**63 - 1, 1.25, -0.0, True, None, [1, "a"],
    {"k": {"n": [1.5]}},
])
def test_internal_serde_round_trips_types(value) -> None:
    serde = InternalSerde()
    data = serde.serialize("t", value)
    back = serde.deserialize("t", data)
    assert back == value and type(back) is type(value)


def test_internal_serde_keeps_str_and_bytes_apart_and_tags_ints() -> None:
    serde = InternalSerde()
    assert serde.serialize("t", "a") != serde.serialize("t", b"a")
    assert serde.serialize("t", 1) == b"i" + LongSerde().serialize("t", 1)
    assert serde.deserialize("t", serde.serialize("t", 2**70)) == 2**70  # via json


def test_internal_serde_refuses_pydantic_models() -> None:
    with pytest.raises(SerializationError, match="pydantic"):
        InternalSerde().serialize("t", Order(id=1, item="x"))


def test_time_windowed_serde_without_size_gives_an_open_end() -> None:
    serde = TimeWindowedSerde(Serdes.string())
    window = serde.deserialize("t", b"k" + LongSerde().serialize("t", 100)).window
    assert window.start == 100 and window.end == 2**63 - 1


def test_windowed_serdes_reject_short_data() -> None:
    with pytest.raises(SerializationError):
        TimeWindowedSerde(Serdes.string(), 5).deserialize("t", b"\x00" * 7)
    with pytest.raises(SerializationError):
        SessionWindowedSerde(Serdes.string()).deserialize("t", b"\x00" * 15)


def test_windowed_serde_with_integer_key() -> None:
    serde = Serdes.windowed(Serdes.integer(), 1000)
    data = serde.serialize("t", Windowed(7, Window(2000, 3000)))
    assert data == b"\x00\x00\x00\x07" + b"\x00" * 6 + b"\x07\xd0"
    assert serde.deserialize("t", data) == Windowed(7, Window(2000, 3000))


@pytest.mark.parametrize(("name", "kind"), [
    ("string", StringSerde), ("String", StringSerde), ("integer", IntegerSerde),
    ("long", LongSerde), ("json", JsonSerde),
    ("org.apache.kafka.common.serialization.Serdes$StringSerde", StringSerde),
    ("org.apache.kafka.common.serialization.Serdes$IntegerSerde", IntegerSerde),
    ("org.apache.kafka.common.serialization.Serdes$LongSerde", LongSerde),
])
def test_resolve_serde_names(name, kind) -> None:
    assert isinstance(resolve_serde(name), kind)


def test_resolve_serde_passes_serdes_and_none_through_and_rejects_unknown() -> None:
    serde = Serdes.double()
    assert resolve_serde(serde) is serde
    assert resolve_serde(None) is None
    with pytest.raises(SerializationError, match="avro"):
        resolve_serde("avro")
    with pytest.raises(SerializationError):
        resolve_serde("windowed")
    with pytest.raises(SerializationError):
        resolve_serde(42)
