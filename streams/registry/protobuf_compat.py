"""Protobuf schemas as ``FileDescriptorProto``s, and their compatibility.

Confluent's clients register a Protobuf schema as a base64 serialized ``FileDescriptorProto``
(text ``.proto`` is also accepted, see :mod:`streams.registry.proto_text`). Compatibility
follows Confluent's Protobuf rules, which are about the wire: a field number must keep a
wire-compatible kind (int32/uint32/int64/uint64/bool share varint, sint32/sint64 zig-zag,
fixed32/sfixed32, fixed64/sfixed64, string/bytes), a message field must keep its message type,
singular/repeated must not flip, a message must not disappear, the package must not change, a
proto2 required field must not come or go, and fields must not move into a oneof. Adding and
removing optional fields is compatible (unknown fields are skipped, missing ones default).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any


def _fdp_module() -> Any:
    from google.protobuf import descriptor_pb2

    return descriptor_pb2


def parse(text: str) -> Any:
    """A ``FileDescriptorProto`` from base64 serialized bytes or from ``.proto`` text."""
    descriptor_pb2 = _fdp_module()
    stripped = text.strip()
    if stripped and not any(tok in stripped for tok in ("{", ";", "syntax")):
        try:
            raw = base64.b64decode(stripped, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"not base64 and not .proto text: {exc}") from None
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
        return fdp
    from .proto_text import parse_proto

    return parse_proto(text)


def normalized(fdp: Any) -> Any:
    """A copy without what text and descriptor forms of one schema may differ in (the file
    name, source info, ``json_name`` that protoc fills in), to decide "the same schema"."""
    copy = type(fdp)()
    copy.CopyFrom(fdp)
    copy.ClearField("name")
    copy.ClearField("source_code_info")

    def strip(messages: Any) -> None:
        for m in messages:
            for f in m.field:
                f.ClearField("json_name")
            strip(m.nested_type)

    strip(copy.message_type)
    return copy


def to_serialized(fdp: Any) -> str:
    return base64.standard_b64encode(fdp.SerializeToString()).decode("ascii")


def _groups() -> dict[int, int]:
    t = _fdp_module().FieldDescriptorProto
    group = {}
    for n, kinds in enumerate([
        (t.TYPE_INT32, t.TYPE_UINT32, t.TYPE_INT64, t.TYPE_UINT64, t.TYPE_BOOL),
        (t.TYPE_SINT32, t.TYPE_SINT64), (t.TYPE_FIXED32, t.TYPE_SFIXED32),
        (t.TYPE_FIXED64, t.TYPE_SFIXED64), (t.TYPE_STRING, t.TYPE_BYTES),
        (t.TYPE_FLOAT,), (t.TYPE_DOUBLE,), (t.TYPE_ENUM,), (t.TYPE_MESSAGE,), (t.TYPE_GROUP,),
    ]):
        for k in kinds:
            group[k] = n
    return group


def _messages(fdp: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(prefix: str, messages: Any) -> None:
        for m in messages:
            name = f"{prefix}.{m.name}" if prefix else m.name
            out[name] = m
            walk(name, m.nested_type)

    walk(fdp.package, fdp.message_type)
    return out


def _type_name(field: Any) -> str:
    return field.type_name.lstrip(".").rpartition(".")[2]


def check(reader: Any, writer: Any) -> list[str]:
    """Messages saying why ``reader`` cannot read what ``writer`` wrote (empty: it can)."""
    t = _fdp_module().FieldDescriptorProto
    groups = _groups()
    errors: list[str] = []

    def fail(kind: str, path: str, text: str) -> None:
        errors.append(f"{{errorType:'{kind}', path:'{path}', description:'{text}'}}")

    if reader.package != writer.package:
        fail("PACKAGE_CHANGED", "#/", f"The package changed from '{writer.package}' to "
                                      f"'{reader.package}'")
    rmsgs, wmsgs = _messages(reader), _messages(writer)
    for name, wm in wmsgs.items():
        path = f"#/{name}"
        rm = rmsgs.get(name)
        if rm is None:
            fail("MESSAGE_REMOVED", path, f"The message '{name}' was removed")
            continue
        rfields = {f.number: f for f in rm.field}
        wfields = {f.number: f for f in wm.field}
        for number, wf in wfields.items():
            rf = rfields.get(number)
            fpath = f"{path}/{number}"
            if rf is None:
                if wf.label == t.LABEL_REQUIRED:
                    fail("REQUIRED_FIELD_REMOVED", fpath,
                         f"The required field '{wf.name}' ({number}) was removed")
                continue
            if groups.get(rf.type) != groups.get(wf.type):
                kind = ("FIELD_KIND_CHANGED" if t.TYPE_MESSAGE in (rf.type, wf.type)
                        else "FIELD_SCALAR_KIND_CHANGED")
                fail(kind, fpath, f"The field '{rf.name}' ({number}) changed kind between "
                                  f"{t.Type.Name(wf.type)} and {t.Type.Name(rf.type)}")
            elif rf.type in (t.TYPE_MESSAGE, t.TYPE_ENUM) and _type_name(rf) != _type_name(wf):
                fail("FIELD_NAMED_TYPE_CHANGED", fpath,
                     f"The field '{rf.name}' ({number}) changed type between "
                     f"{_type_name(wf)} and {_type_name(rf)}")
            if (rf.label == t.LABEL_REPEATED) != (wf.label == t.LABEL_REPEATED):
                fail("FIELD_LABEL_CHANGED", fpath,
                     f"The field '{rf.name}' ({number}) changed between repeated and singular")
            r_oneof = rf.HasField("oneof_index") and not rf.proto3_optional
            w_oneof = wf.HasField("oneof_index") and not wf.proto3_optional
            if r_oneof and not w_oneof:
                fail("FIELD_MOVED_TO_EXISTING_ONEOF", fpath,
                     f"The field '{rf.name}' ({number}) moved into a oneof")
        for number, rf in rfields.items():
            if number not in wfields and rf.label == t.LABEL_REQUIRED:
                fail("REQUIRED_FIELD_ADDED", f"{path}/{number}",
                     f"The required field '{rf.name}' ({number}) was added")
    return errors
