"""SMTs and predicates: Kafka's config keys and documented behaviour, and the chain config."""

from __future__ import annotations

import datetime as dt

import pytest

from connect.data import DataException, Date, Schema, SchemaBuilder, SchemaType, Struct, Timestamp
from connect.records import SinkRecord, SourceRecord
from connect.transforms import (
    PREDICATES,
    TRANSFORMS,
    Transformation,
    TransformationChain,
)
from streams.config import ConfigError

TS = 1488672000000  # 2017-03-05T00:00:00Z


def make(name: str, **configs):
    transform = TRANSFORMS[name]()
    transform.configure({k.replace("_", "."): v for k, v in configs.items()})
    return transform


def sink(value=None, value_schema=None, key=None, key_schema=None, topic="test", headers=None):
    return SinkRecord(topic, 0, key_schema, key, value_schema, value, 42, timestamp=TS,
                      headers=headers)


PERSON = (SchemaBuilder.struct().name("Person")
          .field("name", Schema.STRING_SCHEMA)
          .field("age", Schema.INT32_SCHEMA)
          .field("ssn", Schema.OPTIONAL_STRING_SCHEMA)
          .build())


def person() -> Struct:
    return Struct(PERSON).put("name", "ann").put("age", 42).put("ssn", "123-45-6789")


def test_registries_know_short_kafka_and_python_names():
    assert TRANSFORMS["InsertField$Value"] is TRANSFORMS[
        "org.apache.kafka.connect.transforms.InsertField$Value"]
    assert TRANSFORMS["InsertFieldValue"] is TRANSFORMS["InsertField$Value"]
    expected = {"Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom",
                "HoistField", "InsertField", "InsertHeader", "MaskField", "RegexRouter",
                "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "TimestampRouter",
                "ValueToKey"}
    names = {k.split("$")[0] for k in TRANSFORMS if "." not in k}
    assert expected <= names
    assert set(PREDICATES) >= {"TopicNameMatches", "HasHeaderKey", "RecordIsTombstone",
                               "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"}
    for cls in TRANSFORMS.values():
        assert isinstance(cls(), Transformation)
        for spec in cls().config_def().values():
            assert {"type", "default", "importance", "documentation"} <= set(spec)


# -- InsertField -------------------------------------------------------------------------------
def test_insert_field_schemaless():
    t = make("InsertField$Value", topic_field="topic_name", partition_field="part",
             offset_field="off", timestamp_field="ts", static_field="instance_id",
             static_value="my-instance-id")
    out = t.apply(sink({"magic": 42}))
    assert out.value == {"magic": 42, "topic_name": "test", "part": 0, "off": 42, "ts": TS,
                         "instance_id": "my-instance-id"}
    assert out.value_schema is None and isinstance(out, SinkRecord)


def test_insert_field_with_schema_builds_optional_and_required_fields():
    t = make("InsertField$Value", topic_field="topic!", timestamp_field="ts",
             static_field="source", static_value="file")
    out = t.apply(sink(person(), PERSON))
    schema = out.value_schema
    assert [f.name for f in schema.fields] == ["name", "age", "ssn", "topic", "ts", "source"]
    assert schema.field("topic").schema == Schema.STRING_SCHEMA
    assert schema.field("ts").schema.name == Timestamp.LOGICAL_NAME
    assert schema.field("ts").schema.optional
    assert schema.field("source").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert schema.name == "Person"
    assert out.value.get("topic") == "test"
    assert out.value.get("ts") == dt.datetime(2017, 3, 5, tzinfo=dt.UTC)
    assert out.value.get("age") == 42


def test_insert_field_tombstone_passes_and_offset_needs_sink_record():
    t = make("InsertField$Value", offset_field="off")
    tomb = sink(None)
    assert t.apply(tomb) is tomb
    source = SourceRecord({}, {}, "t", value={"a": 1})
    with pytest.raises(DataException, match="SinkRecord"):
        t.apply(source)
    with pytest.raises(DataException, match="Map"):
        t.apply(sink("a string"))


def test_insert_field_key_variant():
    out = make("InsertField$Key", topic_field="t").apply(sink("v", key={"id": 1}))
    assert out.key == {"id": 1, "t": "test"} and out.value == "v"


# -- ReplaceField / MaskField ------------------------------------------------------------------
def test_replace_field_exclude_include_renames_schemaless():
    value = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
    t = make("ReplaceField$Value", exclude="dont", renames="abc:xyz,foo:bar")
    assert t.apply(sink(value)).value == {"xyz": 42, "bar": True, "etc": "etc"}
    t = make("ReplaceField$Value", include="abc,foo", renames="abc:xyz")
    assert t.apply(sink(value)).value == {"xyz": 42, "foo": True}


def test_replace_field_with_schema():
    t = make("ReplaceField$Value", exclude="ssn", renames="name:full_name")
    out = t.apply(sink(person(), PERSON))
    assert [f.name for f in out.value_schema.fields] == ["full_name", "age"]
    assert out.value.get("full_name") == "ann" and out.value.get("age") == 42
    with pytest.raises(ConfigError):
        make("ReplaceField$Value", renames="broken")


def test_mask_field_type_appropriate_and_replacement():
    value = {"name": "ann", "age": 42, "ok": True, "score": 1.5, "tags": ["a"], "n": None}
    out = make("MaskField$Value", fields="name,age,ok,score,tags,n").apply(sink(value)).value
    assert out == {"name": "", "age": 0, "ok": False, "score": 0.0, "tags": [], "n": None}
    out = make("MaskField$Value", fields="ssn", replacement="***-**-****").apply(
        sink(person(), PERSON))
    assert out.value.get("ssn") == "***-**-****" and out.value.get("name") == "ann"
    out = make("MaskField$Value", fields="age", replacement="-1").apply(sink(person(), PERSON))
    assert out.value.get("age") == -1
    with pytest.raises(DataException):
        make("MaskField$Value", fields="age", replacement="abc").apply(sink(person(), PERSON))
    with pytest.raises(ConfigError, match="fields"):
        make("MaskField$Value")


# -- ValueToKey / ExtractField / HoistField ----------------------------------------------------
def test_value_to_key_schemaless_and_struct():
    out = make("ValueToKey", fields="a,b").apply(sink({"a": 1, "b": 2, "c": 3}))
    assert out.key == {"a": 1, "b": 2} and out.key_schema is None
    out = make("ValueToKey", fields="name").apply(sink(person(), PERSON))
    assert out.key_schema.type is SchemaType.STRUCT
    assert [f.name for f in out.key_schema.fields] == ["name"]
    assert out.key.get("name") == "ann"
    with pytest.raises(DataException, match="does not exist"):
        make("ValueToKey", fields="nope").apply(sink(person(), PERSON))


def test_extract_field():
    t = make("ExtractField$Key", field="magic")
    out = t.apply(sink("v", key={"magic": 42}))
    assert out.key == 42
    assert t.apply(sink("v", key=None)).key is None
    out = make("ExtractField$Value", field="age").apply(sink(person(), PERSON))
    assert out.value == 42 and out.value_schema == Schema.INT32_SCHEMA
    with pytest.raises(DataException, match="Unknown field"):
        make("ExtractField$Value", field="x").apply(sink(person(), PERSON))


def test_hoist_field():
    out = make("HoistField$Key", field="magic").apply(sink("v", key=42))
    assert out.key == {"magic": 42}
    out = make("HoistField$Value", field="line").apply(sink("hello", Schema.STRING_SCHEMA))
    assert out.value_schema.field("line").schema == Schema.STRING_SCHEMA
    assert out.value.get("line") == "hello"


# -- Flatten -----------------------------------------------------------------------------------
def test_flatten_schemaless_nested_maps():
    value = {"content": {"id": 42, "name": {"first": "David", "last": "Wong"}}, "tags": [1],
             "nil": None}
    out = make("Flatten$Value").apply(sink(value)).value
    assert out == {"content.id": 42, "content.name.first": "David", "content.name.last": "Wong",
                   "tags": [1], "nil": None}
    out = make("Flatten$Value", delimiter="_").apply(sink(value)).value
    assert "content_name_first" in out


def test_flatten_struct_propagates_optional():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).optional().build()
    schema = (SchemaBuilder.struct().field("a", Schema.STRING_SCHEMA).field("b", inner)
              .field("arr", SchemaBuilder.array(Schema.INT32_SCHEMA).build()).build())
    value = Struct(schema).put("a", "s").put("b", Struct(inner).put("x", 1)).put("arr", [1, 2])
    out = make("Flatten$Value").apply(sink(value, schema))
    assert [f.name for f in out.value_schema.fields] == ["a", "b.x", "arr"]
    assert out.value_schema.field("b.x").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert (out.value.get("a"), out.value.get("b.x"), out.value.get("arr")) == ("s", 1, [1, 2])
    empty = Struct(schema).put("a", "s").put("arr", [])
    assert make("Flatten$Value").apply(sink(empty, schema)).value.get("b.x") is None


# -- Cast --------------------------------------------------------------------------------------
def test_cast_fields_schemaless_and_struct():
    out = make("Cast$Value", spec="age:string,score:int32,flag:boolean").apply(
        sink({"age": 42, "score": "7", "flag": 1, "other": 1.5})).value
    assert out == {"age": "42", "score": 7, "flag": True, "other": 1.5}
    out = make("Cast$Value", spec="age:float64,name:string").apply(sink(person(), PERSON))
    assert out.value_schema.field("age").schema == Schema.FLOAT64_SCHEMA
    assert out.value.get("age") == 42.0


def test_cast_whole_value_java_semantics():
    assert make("Cast$Value", spec="int8").apply(sink(300)).value == 44  # wraps like (byte)
    assert make("Cast$Value", spec="int32").apply(sink(3.9)).value == 3
    assert make("Cast$Value", spec="string").apply(sink(True)).value == "true"
    assert make("Cast$Value", spec="string").apply(sink(b"\x01\x02")).value == "AQI="
    assert make("Cast$Value", spec="boolean").apply(sink("TRUE")).value is True
    out = make("Cast$Key", spec="int64").apply(sink("v", key="12", key_schema=Schema.STRING_SCHEMA))
    assert out.key == 12 and out.key_schema == Schema.INT64_SCHEMA
    ts = dt.datetime(2017, 3, 5, 1, 2, 3, 4000, tzinfo=dt.UTC)
    assert make("Cast$Value", spec="string").apply(sink(ts, Timestamp.SCHEMA)).value == \
        "2017-03-05T01:02:03.004Z"
    with pytest.raises(DataException):
        make("Cast$Value", spec="int8").apply(sink("1000"))
    with pytest.raises(ConfigError, match="invalid type"):
        make("Cast$Value", spec="a:uuid")


# -- TimestampConverter ------------------------------------------------------------------------
def test_timestamp_converter_field_to_string_and_back():
    t = make("TimestampConverter$Value", field="ts", target_type="string", format="yyyy-MM-dd")
    assert t.apply(sink({"ts": TS, "x": 1})).value == {"ts": "2017-03-05", "x": 1}
    t = make("TimestampConverter$Value", field="ts", target_type="unix",
             format="yyyy-MM-dd HH:mm:ss")
    assert t.apply(sink({"ts": "2017-03-05 00:00:01"})).value == {"ts": TS + 1000}


def test_timestamp_converter_whole_value_with_schemas_and_precision():
    t = make("TimestampConverter$Value", target_type="Timestamp")
    out = t.apply(sink(TS, Schema.INT64_SCHEMA))
    assert out.value == dt.datetime(2017, 3, 5, tzinfo=dt.UTC)
    assert out.value_schema == Timestamp.SCHEMA
    t = make("TimestampConverter$Value", target_type="Date")
    out = t.apply(sink(dt.datetime(2017, 3, 5, 13, 0, tzinfo=dt.UTC), Timestamp.SCHEMA))
    assert out.value == dt.date(2017, 3, 5) and out.value_schema == Date.SCHEMA
    t = make("TimestampConverter$Value", target_type="unix", unix_precision="seconds")
    assert t.apply(sink(dt.datetime(2017, 3, 5, tzinfo=dt.UTC), Timestamp.SCHEMA)).value == \
        TS // 1000
    t = make("TimestampConverter$Value", target_type="Time")
    assert t.apply(sink(TS + 3_723_000)).value == dt.time(1, 2, 3)
    with pytest.raises(ConfigError, match="format"):
        make("TimestampConverter$Value", target_type="string")
    with pytest.raises(ConfigError):
        make("TimestampConverter$Value", target_type="Instant")


# -- routing, filtering, metadata --------------------------------------------------------------
def test_regex_router_uses_full_match_and_java_groups():
    t = make("RegexRouter", regex="(.*)customers(.*)", replacement="$1cust$2")
    assert t.apply(sink(topic="db.customers.v1")).topic == "db.cust.v1"
    t = make("RegexRouter", regex="([^.]+)\\.([^.]+)\\.([^.]+)", replacement="$3")
    assert t.apply(sink(topic="server.db.orders")).topic == "orders"
    assert t.apply(sink(topic="no-dots")).topic == "no-dots"
    t = make("RegexRouter", regex="foo", replacement="bar")
    assert t.apply(sink(topic="foofoo")).topic == "foofoo"  # not a full match
    with pytest.raises(ConfigError):
        make("RegexRouter", regex="(", replacement="x")


def test_timestamp_router_defaults():
    out = make("TimestampRouter").apply(sink(topic="foo"))
    assert out.topic == "foo-20170305"
    out = make("TimestampRouter", topic_format="${timestamp}_${topic}",
               timestamp_format="yyyy-MM").apply(sink(topic="foo"))
    assert out.topic == "2017-03_foo"
    no_ts = SinkRecord("foo", 0, None, None, None, "v", 1)
    with pytest.raises(DataException, match="Timestamp missing"):
        make("TimestampRouter").apply(no_ts)


def test_filter_drops_and_set_schema_metadata():
    assert make("Filter").apply(sink("x")) is None
    out = make("SetSchemaMetadata$Value", schema_name="com.example.P", schema_version="3").apply(
        sink(person(), PERSON))
    assert (out.value_schema.name, out.value_schema.version) == ("com.example.P", 3)
    assert out.value.schema is out.value_schema and out.value.get("name") == "ann"
    with pytest.raises(ConfigError):
        make("SetSchemaMetadata$Value")
    with pytest.raises(DataException, match="Schema required"):
        make("SetSchemaMetadata$Value", schema_name="x").apply(sink({"a": 1}))


# -- headers -----------------------------------------------------------------------------------
def test_insert_header_parses_literal_and_drop_headers():
    out = make("InsertHeader", header="source", value_literal="file").apply(sink("v"))
    assert out.headers.last_with_name("source").value == "file"
    out = make("InsertHeader", header="n", value_literal="42").apply(out)
    assert out.headers.last_with_name("n").value == 42
    out = make("DropHeaders", headers="source,missing").apply(out)
    assert out.headers.keys() == ["n"]


def test_header_from_copy_and_move():
    record = sink({"id": 7, "ts": 5, "x": 1}, headers=[("old", "h")])
    out = make("HeaderFrom$Value", fields="id,ts", headers="record_id,ts_h",
               operation="copy").apply(record)
    assert out.value == {"id": 7, "ts": 5, "x": 1}
    assert [(h.key, h.value) for h in out.headers] == [("old", "h"), ("record_id", 7),
                                                       ("ts_h", 5)]
    out = make("HeaderFrom$Value", fields="ssn", headers="ssn", operation="move").apply(
        sink(person(), PERSON))
    assert [f.name for f in out.value_schema.fields] == ["name", "age"]
    assert out.headers.last_with_name("ssn").schema == Schema.OPTIONAL_STRING_SCHEMA
    with pytest.raises(ConfigError):
        make("HeaderFrom$Value", fields="a,b", headers="a", operation="copy")
    with pytest.raises(ConfigError):
        make("HeaderFrom$Value", fields="a", headers="a", operation="steal")


# -- predicates and chains ---------------------------------------------------------------------
def test_predicates():
    p = PREDICATES["TopicNameMatches"]()
    p.configure({"pattern": "foo.*"})
    assert p.test(sink(topic="foobar")) and not p.test(sink(topic="barfoo"))
    h = PREDICATES["HasHeaderKey"]()
    h.configure({"name": "trace"})
    assert h.test(sink("v", headers=[("trace", "1")])) and not h.test(sink("v"))
    t = PREDICATES["RecordIsTombstone"]()
    t.configure({})
    assert t.test(sink(None)) and not t.test(sink("v"))


def test_chain_from_kafka_docs_example():
    chain = TransformationChain.from_config({
        "name": "local-file-source",
        "transforms": "MakeMap, InsertSource",
        "transforms.MakeMap.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.MakeMap.field": "line",
        "transforms.InsertSource.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.InsertSource.static.field": "data_source",
        "transforms.InsertSource.static.value": "test-file-source",
    })
    record = SourceRecord({"filename": "f"}, {"position": 4}, "connect-test", None, None, None,
                          None, "foo")
    out = chain.apply(record)
    assert out.value == {"line": "foo", "data_source": "test-file-source"}
    assert out.source_offset == {"position": 4}


def test_chain_predicates_and_negate():
    config = {
        "transforms": "Filter,Extract",
        "transforms.Filter.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.Filter.predicate": "IsFoo",
        "transforms.Extract.type": "ExtractField$Key",
        "transforms.Extract.field": "other_field",
        "transforms.Extract.predicate": "IsBar",
        "transforms.Extract.negate": "true",
        "predicates": "IsFoo,IsBar",
        "predicates.IsFoo.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.IsFoo.pattern": "foo",
        "predicates.IsBar.type": "TopicNameMatches",
        "predicates.IsBar.pattern": "bar",
    }
    chain = TransformationChain.from_config(config)
    assert chain.apply(sink("v", key={"other_field": 1}, topic="foo")) is None
    assert chain.apply(sink("v", key={"other_field": 1}, topic="bar")).key == {"other_field": 1}
    assert chain.apply(sink("v", key={"other_field": 1}, topic="baz")).key == 1
    chain.close()


def test_chain_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="transforms.a.type"):
        TransformationChain.from_config({"transforms": "a"})
    with pytest.raises(ConfigError, match="unknown transformation"):
        TransformationChain.from_config({"transforms": "a", "transforms.a.type": "Nope"})
    with pytest.raises(ConfigError, match="not listed in predicates"):
        TransformationChain.from_config({"transforms": "a", "transforms.a.type": "Filter",
                                         "transforms.a.predicate": "p"})
    with pytest.raises(ConfigError, match="negate"):
        TransformationChain.from_config({"transforms": "a", "transforms.a.type": "Filter",
                                         "transforms.a.negate": "true"})
    with pytest.raises(ConfigError, match="did you mean 'field'"):
        TransformationChain.from_config({"transforms": "a",
                                         "transforms.a.type": "ExtractField$Value",
                                         "transforms.a.feild": "x"})
    assert len(TransformationChain.from_config({})) == 0


def test_chain_tags_failures_with_the_stage_and_accepts_dotted_paths():
    chain = TransformationChain.from_config({
        "transforms": "x",
        "transforms.x.type": "connect.transforms.fields.ExtractFieldValue",
        "transforms.x.field": "a",
    })
    with pytest.raises(DataException) as info:
        chain.apply(sink("not a map"))
    assert info.value.transform_alias == "x"
    assert info.value.transform_class.endswith("ExtractField$Value")
