"""Confluent's ``io.confluent.connect.protobuf.ProtobufConverter``: Protobuf with a schema
registry, in Confluent's wire format (magic byte 0, schema id, message indexes, payload).

Reading: the writer's file descriptor comes from the registry (``format=serialized``, and
its references, recursively), the message from the indexes; messages become STRUCTs (the
message's full name), repeated fields ARRAYs, map fields MAPs, enums STRING, int32/sint32/
sfixed32 INT32, the 64-bit and unsigned 32-bit kinds INT64, float FLOAT32, double FLOAT64,
``google.protobuf.Timestamp`` a Connect Timestamp (microseconds kept).
Fields are optional except repeated and map fields. Writing: a Connect STRUCT becomes a
proto3 message (fields numbered in order; nested STRUCTs nested messages; optional scalars
``optional``); the Connect logical types are written as their underlying integer or bytes
(Confluent uses ``google.type.Date`` and friends: not done here). Settings as
:mod:`connect.converters.avro`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import threading
from typing import Any

from connect.converters.avro import RegistryConverter
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
)

_DEFAULT_NAME = "ConnectDefault1"
_TIMESTAMP = "google.protobuf.Timestamp"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _fd() -> Any:
    from google.protobuf import descriptor

    return descriptor.FieldDescriptor


def message_to_connect(desc: Any) -> Schema:
    return _message_builder(desc).optional().build()


def _message_builder(desc: Any) -> SchemaBuilder:
    builder = SchemaBuilder.struct().name(desc.full_name)
    for field in desc.fields:
        builder.field(field.name, _field_schema(field))
    return builder


def _is_map(field: Any) -> bool:
    return (field.message_type is not None and field.message_type.GetOptions().map_entry
            and _is_repeated(field))


def _is_repeated(field: Any) -> bool:
    return bool(getattr(field, "is_repeated", None)) if hasattr(field, "is_repeated") \
        else field.label == _fd().LABEL_REPEATED


def _field_schema(field: Any) -> Schema:
    if _is_map(field):
        k, v = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return SchemaBuilder.map(_single(k).build(), _single(v).build()).optional().build()
    single = _single(field)
    if _is_repeated(field):
        return SchemaBuilder.array(single.build()).optional().build()
    return single.optional().build()  # an unset message field reads as null


def _single(field: Any) -> SchemaBuilder:
    fd = _fd()
    t = field.type
    if t == fd.TYPE_MESSAGE:
        if field.message_type.full_name == _TIMESTAMP:
            return Timestamp.builder()  # as Confluent's ProtobufData maps it
        return _message_builder(field.message_type)
    if t in (fd.TYPE_INT32, fd.TYPE_SINT32, fd.TYPE_SFIXED32):
        return SchemaBuilder.int32()
    if t in (fd.TYPE_INT64, fd.TYPE_SINT64, fd.TYPE_SFIXED64, fd.TYPE_UINT32, fd.TYPE_FIXED32,
             fd.TYPE_UINT64, fd.TYPE_FIXED64):
        return SchemaBuilder.int64()
    if t == fd.TYPE_FLOAT:
        return SchemaBuilder.float32()
    if t == fd.TYPE_DOUBLE:
        return SchemaBuilder.float64()
    if t == fd.TYPE_BOOL:
        return SchemaBuilder.bool()
    if t == fd.TYPE_BYTES:
        return SchemaBuilder.bytes()
    return SchemaBuilder.string()  # string, enum


def message_to_value(message: Any, schema: Schema) -> Struct:
    fd = _fd()
    out = Struct(schema)
    for field in message.DESCRIPTOR.fields:
        f = schema.field(field.name)
        assert f is not None
        raw = getattr(message, field.name)
        if _is_map(field):
            vfield = field.message_type.fields_by_name["value"]
            vs = f.schema.value_schema
            out.put(f, {k: _single_value(v, vfield, vs) for k, v in raw.items()})
        elif _is_repeated(field):
            out.put(f, [_single_value(v, field, f.schema.value_schema) for v in raw])
        elif field.type == fd.TYPE_MESSAGE and not message.HasField(field.name):
            out.put(f, None)
        else:
            out.put(f, _single_value(raw, field, f.schema))
    return out


def _single_value(raw: Any, field: Any, schema: Any) -> Any:
    fd = _fd()
    if field.type == fd.TYPE_MESSAGE:
        if field.message_type.full_name == _TIMESTAMP:
            return _EPOCH + dt.timedelta(seconds=raw.seconds, microseconds=raw.nanos // 1000)
        return message_to_value(raw, schema)
    if field.type == fd.TYPE_ENUM:
        value = field.enum_type.values_by_number.get(raw)
        return value.name if value is not None else str(raw)
    return raw


# -- Connect -> Protobuf ----------------------------------------------------------------------

def connect_to_file(schema: Schema) -> Any:
    """A proto3 ``FileDescriptorProto`` with one top-level message for a STRUCT schema."""
    from google.protobuf import descriptor_pb2

    if schema.type is not SchemaType.STRUCT:
        raise DataException("ProtobufConverter writes STRUCT schemas only")
    fdp = descriptor_pb2.FileDescriptorProto(name="connect.proto", syntax="proto3")
    full = schema.name or _DEFAULT_NAME
    package, _, simple = full.rpartition(".")
    if package:
        fdp.package = package
    _message(fdp.message_type.add(), simple, schema, f".{full}")
    return fdp


def _message(msg: Any, name: str, schema: Schema, full: str) -> None:
    from google.protobuf import descriptor_pb2

    t = descriptor_pb2.FieldDescriptorProto
    msg.name = name
    for number, f in enumerate(schema.fields, start=1):
        field = msg.field.add(name=f.name, number=number, label=t.LABEL_OPTIONAL)
        fs = f.schema
        if fs.type is SchemaType.ARRAY:
            field.label = t.LABEL_REPEATED
            assert fs.value_schema is not None
            _scalar(msg, field, fs.value_schema, f"{f.name}_item", full)
        elif fs.type is SchemaType.MAP:
            entry = msg.nested_type.add()
            entry.name = "".join(p.capitalize() for p in f.name.split("_")) + "Entry"
            entry.options.map_entry = True
            assert fs.key_schema is not None and fs.value_schema is not None
            k = entry.field.add(name="key", number=1, label=t.LABEL_OPTIONAL)
            _scalar(entry, k, fs.key_schema, "key", f"{full}.{entry.name}")
            v = entry.field.add(name="value", number=2, label=t.LABEL_OPTIONAL)
            _scalar(entry, v, fs.value_schema, "value", f"{full}.{entry.name}")
            field.label = t.LABEL_REPEATED
            field.type = t.TYPE_MESSAGE
            field.type_name = f"{full}.{entry.name}"
        else:
            _scalar(msg, field, fs, f.name, full)
            if fs.optional and fs.type is not SchemaType.STRUCT:
                msg.oneof_decl.add(name=f"_{f.name}")
                field.oneof_index = len(msg.oneof_decl) - 1
                field.proto3_optional = True


def _scalar(msg: Any, field: Any, schema: Schema, name: str, full: str) -> None:
    from google.protobuf import descriptor_pb2

    t = descriptor_pb2.FieldDescriptorProto
    kinds = {SchemaType.INT8: t.TYPE_INT32, SchemaType.INT16: t.TYPE_INT32,
             SchemaType.INT32: t.TYPE_INT32, SchemaType.INT64: t.TYPE_INT64,
             SchemaType.FLOAT32: t.TYPE_FLOAT, SchemaType.FLOAT64: t.TYPE_DOUBLE,
             SchemaType.BOOLEAN: t.TYPE_BOOL, SchemaType.STRING: t.TYPE_STRING,
             SchemaType.BYTES: t.TYPE_BYTES}
    if schema.type in kinds:
        field.type = kinds[schema.type]
        return
    if schema.type is SchemaType.STRUCT:
        nested = msg.nested_type.add()
        nested_name = (schema.name or name).rpartition(".")[2]
        nested_name = nested_name[:1].upper() + nested_name[1:]
        _message(nested, nested_name, schema, f"{full}.{nested_name}")
        field.type = t.TYPE_MESSAGE
        field.type_name = f"{full}.{nested_name}"
        return
    raise DataException(f"ProtobufConverter cannot write a nested {schema.type.name} here")


def value_to_message(value: Any, schema: Schema, cls: Any) -> Any:
    message = cls()
    _fill(message, value, schema)
    return message


def _plain(value: Any, schema: Schema | None) -> Any:
    if schema is None or value is None:
        return value
    name = schema.name
    if name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        cls = {Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time,
               Timestamp.LOGICAL_NAME: Timestamp}[name]
        return cls.from_logical(schema, value)
    if name == Decimal.LOGICAL_NAME:
        return Decimal.from_logical(schema, value)
    return value


def _fill(message: Any, value: Struct, schema: Schema) -> None:
    for f in schema.fields:
        v = value.get(f)
        if v is None:
            continue
        fs = f.schema
        if fs.type is SchemaType.STRUCT:
            _fill(getattr(message, f.name), v, fs)
        elif fs.type is SchemaType.ARRAY:
            target = getattr(message, f.name)
            for item in v:
                if isinstance(item, Struct):
                    _fill(target.add(), item, fs.value_schema)  # type: ignore[arg-type]
                else:
                    target.append(_plain(item, fs.value_schema))
        elif fs.type is SchemaType.MAP:
            target = getattr(message, f.name)
            for k, item in v.items():
                if isinstance(item, Struct):
                    _fill(target[k], item, fs.value_schema)  # type: ignore[arg-type]
                else:
                    target[k] = _plain(item, fs.value_schema)
        else:
            setattr(message, f.name, _plain(v, fs))


def _well_known(name: str) -> Any:
    """The ``FileDescriptorProto`` of a ``google/protobuf/*.proto`` file from protobuf itself."""
    import importlib

    from google.protobuf import descriptor_pb2, descriptor_pool

    module = name.removeprefix("google/protobuf/").removesuffix(".proto") + "_pb2"
    with contextlib.suppress(ImportError):
        importlib.import_module(f"google.protobuf.{module}")
    try:
        file = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        raise DataException(f"unknown well-known Protobuf file {name!r}") from None
    fdp = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(fdp)
    return fdp


class ProtobufConverter(RegistryConverter):
    """``io.confluent.connect.protobuf.ProtobufConverter``."""

    schema_type = "PROTOBUF"

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        super().configure(configs, is_key)
        self._write_cache: dict[Schema, tuple[str, Any]] = {}
        self._pool_lock = threading.Lock()

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        from google.protobuf import descriptor_pool, message_factory

        if value is None:
            return None
        if schema is None or not isinstance(value, Struct):
            raise DataException("ProtobufConverter needs a STRUCT schema and a Struct value")
        hit = self._write_cache.get(schema)
        if hit is None:
            fdp = connect_to_file(schema)
            pool = descriptor_pool.DescriptorPool()
            pool.Add(fdp)
            full = (schema.name or _DEFAULT_NAME)
            cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
            hit = (base64.standard_b64encode(fdp.SerializeToString()).decode(), cls)
            self._write_cache[schema] = hit
        text, cls = hit
        schema_id = self.schema_id(topic, text, schema.name or _DEFAULT_NAME)
        try:
            message = value_to_message(value, schema, cls)
        except (TypeError, ValueError, AttributeError) as exc:
            raise DataException(f"ProtobufConverter cannot write {value!r}: {exc}") from exc
        return self.header(schema_id) + b"\x00" + message.SerializeToString()

    def _file(self, pool: Any, schema: str, references: Any, seen: set[str],
              name: str | None = None) -> Any:
        from streams.registry.protobuf_compat import parse

        for ref in references:
            if ref["name"] in seen:
                continue
            seen.add(ref["name"])
            dep = self.client.get_version(ref["subject"], ref["version"], fmt="serialized")
            self._file(pool, dep.schema, dep.references, seen, ref["name"])
        fdp = parse(schema)
        if not fdp.name or fdp.name == "default":
            fdp.name = name or f"registry-{len(seen)}.proto"
        for dep in fdp.dependency:  # well-known types are nobody's reference: ours
            if dep.startswith("google/protobuf/") and dep not in seen:
                seen.add(dep)
                with contextlib.suppress(TypeError):
                    pool.Add(_well_known(dep))
        with contextlib.suppress(TypeError):  # already in the pool (a shared dependency)
            pool.Add(fdp)
        return pool.FindFileByName(fdp.name)

    def to_connect_data(self, topic: str, value: bytes | None) -> SchemaAndValue:
        from google.protobuf import descriptor_pool, message_factory

        from streams.serde_registry import decode_indexes

        if value is None:
            return SchemaAndValue(None, None)
        schema_id, payload = self.split(topic, value)
        indexes, pos = decode_indexes(payload)

        def build(_: Any) -> tuple[Any, dict[tuple[int, ...], Any]]:
            registered = self.client.get_schema(schema_id, fmt="serialized")
            pool = descriptor_pool.DescriptorPool()
            file = self._file(pool, registered.schema, registered.references, set())
            return file, {}

        file, by_path = self.cached(schema_id, build)
        key = tuple(indexes)
        with self._pool_lock:
            found = by_path.get(key)
            if found is None:
                desc = list(file.message_types_by_name.values())[indexes[0]]
                for i in indexes[1:]:
                    desc = desc.nested_types[i]
                found = (message_factory.GetMessageClass(desc), message_to_connect(desc))
                by_path[key] = found
        cls, schema = found
        message = cls()
        try:
            message.ParseFromString(bytes(payload[pos:]))
        except Exception as exc:
            raise DataException(f"ProtobufConverter cannot read schema id {schema_id} from "
                                f"topic {topic!r}: {exc}") from exc
        return SchemaAndValue(schema, message_to_value(message, schema))
