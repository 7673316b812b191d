"""Compatibility matrix per format and level (no broker: the checks are pure functions), and
one check through HTTP that a 409 names the field."""

from __future__ import annotations

import json

import pytest

from streams.registry.errors import RegistryError
from streams.registry.schemas import LEVELS, check_compatibility, parse


def avro(*fields: dict) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": list(fields)})


A_NAME = {"name": "name", "type": "string"}
A_AGE = {"name": "age", "type": "int"}
A_AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
A_AGE_LONG = {"name": "age", "type": "long"}

JSON_CLOSED_1 = {"type": "object", "additionalProperties": False,
                 "properties": {"name": {"type": "string"}}}
JSON_CLOSED_2 = {**JSON_CLOSED_1, "properties": {"name": {"type": "string"},
                                                 "age": {"type": "integer"}}}
JSON_OPEN_1 = {"type": "object", "properties": {"name": {"type": "string"}}}
JSON_OPEN_2 = {"type": "object", "properties": {"name": {"type": "string"},
                                                "age": {"type": "integer"}}}

PROTO_1 = 'syntax = "proto3"; message M { string name = 1; }'
PROTO_2 = 'syntax = "proto3"; message M { string name = 1; int32 age = 2; }'
PROTO_2_LONG = 'syntax = "proto3"; message M { string name = 1; int64 age = 2; }'
PROTO_2_STR = 'syntax = "proto3"; message M { string name = 1; string age = 2; }'
PROTO_GONE = 'syntax = "proto3"; message N { string name = 1; }'

B, BT, F, FT, FU, FUT, N = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
                            "FULL", "FULL_TRANSITIVE", "NONE")

# (type, old, new, levels that accept, field the failure must name)
CASES = [
    # Avro: add a field without a default: new readers cannot read old data (not BACKWARD).
    ("AVRO", avro(A_NAME), avro(A_NAME, A_AGE), {F, FT, N}, "age"),
    # Add with a default: both directions.
    ("AVRO", avro(A_NAME), avro(A_NAME, A_AGE_DEFAULT), set(LEVELS), None),
    # Remove a field without a default: old readers miss it (not FORWARD).
    ("AVRO", avro(A_NAME, A_AGE), avro(A_NAME), {B, BT, N}, "age"),
    # Promote int -> long: new reads old, old cannot read long.
    ("AVRO", avro(A_NAME, A_AGE), avro(A_NAME, A_AGE_LONG), {B, BT, N}, "age"),
    # Change to an unrelated type.
    ("AVRO", avro(A_NAME, A_AGE), avro(A_NAME, {"name": "age", "type": "boolean"}), {N}, "age"),
    # JSON Schema: closed content model, add a property: old data cannot have it.
    ("JSON", json.dumps(JSON_CLOSED_1), json.dumps(JSON_CLOSED_2), {B, BT, N}, "age"),
    # Open content model, add a property: old data may hold 'age' of any type.
    ("JSON", json.dumps(JSON_OPEN_1), json.dumps(JSON_OPEN_2), {F, FT, N}, "age"),
    # Newly required property.
    ("JSON", json.dumps(JSON_OPEN_1), json.dumps({**JSON_OPEN_1, "required": ["name"]}),
     {F, FT, N}, "name"),
    # Integer widened to number.
    ("JSON", json.dumps(JSON_OPEN_2),
     json.dumps({**JSON_OPEN_2, "properties": {"name": {"type": "string"},
                                               "age": {"type": "number"}}}), {B, BT, N}, "age"),
    # An optional property (oneOf null/T, as JsonSchemaConverter writes it) changing type.
    ("JSON", json.dumps({"type": "object", "additionalProperties": False, "properties": {
        "tally": {"oneOf": [{"type": "null"}, {"type": "integer"}]}}}),
     json.dumps({"type": "object", "additionalProperties": False, "properties": {
         "tally": {"oneOf": [{"type": "null"}, {"type": "number"}]}}}), {B, BT, N}, "tally"),
    ("JSON", json.dumps({"type": "object", "additionalProperties": False, "properties": {
        "tally": {"oneOf": [{"type": "null"}, {"type": "integer"}]}}}),
     json.dumps({"type": "object", "additionalProperties": False, "properties": {
         "tally": {"oneOf": [{"type": "null"}, {"type": "string"}]}}}), {N}, "tally"),
    # Protobuf: adding and removing fields is wire-compatible.
    ("PROTOBUF", PROTO_1, PROTO_2, set(LEVELS), None),
    ("PROTOBUF", PROTO_2, PROTO_2_LONG, set(LEVELS), None),  # both varint
    ("PROTOBUF", PROTO_2, PROTO_2_STR, {N}, "age"),
    ("PROTOBUF", PROTO_1, PROTO_GONE, {N}, "M"),  # a message renamed: removed either way
]


@pytest.mark.parametrize("kind,old,new,accepted,field", CASES)
def test_matrix(kind: str, old: str, new: str, accepted: set[str], field: str | None) -> None:
    old_p, new_p = parse(old, kind), parse(new, kind)
    for level in LEVELS:
        messages = check_compatibility(level, new_p, [(1, old_p)])
        assert (not messages) == (level in accepted), (level, messages)
        if messages and field:
            assert any(field in m for m in messages), messages


def test_transitive_levels_check_every_version() -> None:
    """v1 -> v2 adds age with a default; v3 drops the default. v3 reads v2 data (age present)
    but not v1 data: BACKWARD accepts, BACKWARD_TRANSITIVE refuses."""
    v1 = parse(avro(A_NAME), "AVRO")
    v2 = parse(avro(A_NAME, A_AGE_DEFAULT), "AVRO")
    v3 = parse(avro(A_NAME, A_AGE), "AVRO")
    history = [(1, v1), (2, v2)]
    assert check_compatibility("BACKWARD", v3, history) == []
    messages = check_compatibility("BACKWARD_TRANSITIVE", v3, history)
    assert any("age" in m for m in messages) and "{oldSchemaVersion: 1}" in messages


def test_avro_details() -> None:
    enum1 = json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]})
    enum2 = json.dumps({"type": "enum", "name": "E", "symbols": ["A"]})
    # A reader enum lacking a writer symbol cannot read it.
    assert check_compatibility("BACKWARD", parse(enum2, "AVRO"), [(1, parse(enum1, "AVRO"))])
    assert not check_compatibility("BACKWARD", parse(enum1, "AVRO"), [(1, parse(enum2, "AVRO"))])
    # Union widening: ["null","string"] reads "string"; not the other way round.
    u = parse(json.dumps(["null", "string"]), "AVRO")
    s = parse(json.dumps("string"), "AVRO")
    assert not check_compatibility("BACKWARD", u, [(1, s)])
    assert check_compatibility("BACKWARD", s, [(1, u)])
    # Renamed record: incompatible unless the reader lists the old name as an alias.
    r1 = json.dumps({"type": "record", "name": "Old", "fields": [A_NAME]})
    r2 = json.dumps({"type": "record", "name": "New", "fields": [A_NAME]})
    r2a = json.dumps({"type": "record", "name": "New", "aliases": ["Old"], "fields": [A_NAME]})
    assert check_compatibility("BACKWARD", parse(r2, "AVRO"), [(1, parse(r1, "AVRO"))])
    assert not check_compatibility("BACKWARD", parse(r2a, "AVRO"), [(1, parse(r1, "AVRO"))])
    # Recursive types terminate.
    node = json.dumps({"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]})
    assert not check_compatibility("FULL", parse(node, "AVRO"), [(1, parse(node, "AVRO"))])
    # A different schema type is always incompatible.
    assert check_compatibility("BACKWARD", parse('{"type":"object"}', "JSON"), [(1, s)])


def test_invalid_schemas_are_42201() -> None:
    for text, kind in [("{", "AVRO"), ('{"type": "nope"}', "AVRO"),
                       ('{"type": 5}', "JSON"), ("message {", "PROTOBUF"),
                       ('{"type":"string"}', "XML")]:
        with pytest.raises(RegistryError) as err:
            parse(text, kind)
        assert err.value.code == 42201, text


@pytest.mark.parametrize(("text", "kind", "reason"), [
    ('{"type":"record","name":"A","fields":[{"name":"x","type":"strin"}]}', "AVRO",
     "AVRO schema: unknown type 'strin' (not a primitive type, nor a named type defined "
     "before)"),
    ('{"type":"record","name":"A"}', "AVRO", "AVRO schema: record A needs a 'fields' list"),
    ('{"type": "record"', "AVRO", "AVRO schema: Expecting ',' delimiter: line 1 column 18 "
     "(char 17)"),
    ('{"type":"objec"}', "JSON", "JSON schema: 'objec' is not valid under any of the given "
     "schemas"),
])
def test_an_invalid_schema_says_why_in_one_line(text: str, kind: str, reason: str) -> None:
    with pytest.raises(RegistryError) as err:
        parse(text, kind)
    assert err.value.message == f"Invalid schema: {reason}"


def test_incompatible_registration_over_http_names_the_field(registry) -> None:
    from streams.registry.client import SchemaRegistryClient

    client = SchemaRegistryClient(registry.url)
    client.register("compat-http-value", avro(A_NAME))
    client.set_compatibility("FORWARD", "compat-http-value")
    ok, messages = client.test_compatibility("compat-http-value", avro(A_NAME, A_AGE))
    assert ok and messages == []
    with pytest.raises(RegistryError) as err:
        client.register("compat-http-value", avro())  # drops 'name', which has no default
    assert err.value.status == 409 and "'name'" in err.value.message
