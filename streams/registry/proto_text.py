"""``.proto`` text to a ``FileDescriptorProto`` (a small parser for proto2/proto3 files).

Covers what schemas registered as text need for compatibility checks and for answering
``?format=serialized``: ``syntax``, ``package``, ``import``, ``option`` (skipped), messages
(nested), enums, fields with labels and ``[options]``, ``map<K, V>``, ``oneof``, ``reserved``
and ``extensions`` (skipped). Type names are resolved to fully qualified names where they
name a message or enum of this file; others (imports) keep a leading dot on their own spelling.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|'
                    r'[A-Za-z_][\w.]*|\.[A-Za-z_][\w.]*|-?\d[\w.+-]*|.', re.S)

_SCALARS = {
    "double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7,
    "bool": 8, "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16,
    "sint32": 17, "sint64": 18,
}
_LABELS = {"optional": 1, "required": 2, "repeated": 3}


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = [t for t in _TOKEN.findall(text)
                     if t.strip() and not t.startswith("//") and not t.startswith("/*")]
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def next(self) -> str:
        if self.i >= len(self.toks):
            raise ValueError("unexpected end of .proto text")
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ValueError(f"expected {tok!r} in .proto text, got {got!r} (token {self.i})")

    def skip_statement(self) -> None:
        depth = 0
        while True:
            tok = self.next()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    return
            elif tok == ";" and depth == 0:
                return


def parse_proto(text: str) -> Any:
    from google.protobuf import descriptor_pb2

    p = _Parser(text)
    fdp = descriptor_pb2.FileDescriptorProto(name="default")
    fdp.syntax = "proto2"
    unresolved: list[tuple[Any, str, str]] = []  # (field, type spelling, scope)
    while p.peek():
        tok = p.next()
        if tok == "syntax" or tok == "edition":
            p.expect("=")
            fdp.syntax = p.next().strip("\"'")
            p.expect(";")
        elif tok == "package":
            fdp.package = p.next()
            p.expect(";")
        elif tok == "import":
            name = p.next()
            if name in ("public", "weak"):
                name = p.next()
            fdp.dependency.append(name.strip("\"'"))
            p.expect(";")
        elif tok == "message":
            _message(p, fdp.message_type.add(), fdp.package, unresolved, fdp.syntax)
        elif tok == "enum":
            _enum(p, fdp.enum_type.add())
        elif tok in ("option", "service", "extend"):
            p.skip_statement()
        elif tok == ";":
            continue
        else:
            raise ValueError(f"unexpected {tok!r} at the top level of .proto text")
    _resolve(fdp, unresolved)
    return fdp


def _message(p: _Parser, msg: Any, scope: str, unresolved: list, syntax: str) -> None:
    msg.name = p.next()
    full = f"{scope}.{msg.name}" if scope else msg.name
    p.expect("{")
    oneof: int | None = None
    oneof_depth = 0
    while True:
        tok = p.next()
        if tok == "}":
            if oneof is not None and oneof_depth:
                oneof = None
                oneof_depth = 0
                continue
            return
        if tok == ";":
            continue
        if tok == "message":
            _message(p, msg.nested_type.add(), full, unresolved, syntax)
        elif tok == "enum":
            _enum(p, msg.enum_type.add())
        elif tok in ("option", "reserved", "extensions", "extend"):
            p.skip_statement()
        elif tok == "oneof":
            decl = msg.oneof_decl.add()
            decl.name = p.next()
            p.expect("{")
            oneof = len(msg.oneof_decl) - 1
            oneof_depth = 1
        elif tok == "map":
            p.expect("<")
            ktype = p.next()
            p.expect(",")
            vtype = p.next()
            p.expect(">")
            name = p.next()
            p.expect("=")
            number = int(p.next())
            _field_options(p)
            entry = msg.nested_type.add()
            entry.name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
            entry.options.map_entry = True
            for fname, ftype, fnum in (("key", ktype, 1), ("value", vtype, 2)):
                _add_field(entry, fname, ftype, fnum, 1, f"{full}.{entry.name}", unresolved)
            field = msg.field.add(name=name, number=number, label=3, type=11)
            field.type_name = f".{full}.{entry.name}"
        else:
            label = _LABELS.get(tok)
            ftype = p.next() if label else tok
            name = p.next()
            p.expect("=")
            number = int(p.next())
            _field_options(p)
            explicit_optional = tok == "optional" and syntax == "proto3"
            field = _add_field(msg, name, ftype, number, label or 1, full, unresolved)
            if oneof is not None:
                field.oneof_index = oneof
            elif explicit_optional:
                decl = msg.oneof_decl.add()
                decl.name = f"_{name}"
                field.oneof_index = len(msg.oneof_decl) - 1
                field.proto3_optional = True


def _field_options(p: _Parser) -> None:
    if p.peek() == "[":
        while p.next() != "]":
            pass
    p.expect(";")


def _add_field(msg: Any, name: str, ftype: str, number: int, label: int, scope: str,
               unresolved: list) -> Any:
    field = msg.field.add(name=name, number=number, label=label)
    if ftype in _SCALARS:
        field.type = _SCALARS[ftype]
    else:
        unresolved.append((field, ftype, scope))
    return field


def _enum(p: _Parser, enum: Any) -> None:
    enum.name = p.next()
    p.expect("{")
    while True:
        tok = p.next()
        if tok == "}":
            return
        if tok in (";",):
            continue
        if tok in ("option", "reserved"):
            p.skip_statement()
            continue
        p.expect("=")
        enum.value.add(name=tok, number=int(p.next()))
        _field_options(p)


def _resolve(fdp: Any, unresolved: list) -> None:
    kinds: dict[str, int] = {}

    def walk(prefix: str, messages: Any, enums: Any) -> None:
        for e in enums:
            kinds[f"{prefix}.{e.name}" if prefix else e.name] = 14
        for m in messages:
            name = f"{prefix}.{m.name}" if prefix else m.name
            kinds[name] = 11
            walk(name, m.nested_type, m.enum_type)

    walk(fdp.package, fdp.message_type, fdp.enum_type)
    for field, spelling, scope in unresolved:
        if spelling.startswith("."):
            name = spelling[1:]
        else:  # protobuf scoping: innermost scope outwards
            name = spelling
            parts = scope.split(".") if scope else []
            for n in range(len(parts), -1, -1):
                candidate = ".".join([*parts[:n], spelling])
                if candidate in kinds:
                    name = candidate
                    break
        field.type = kinds.get(name, 11)
        field.type_name = f".{name}"


_TYPE_NAMES = {v: k for k, v in _SCALARS.items()}


def to_proto_text(fdp: Any) -> str:
    """``.proto`` text for a ``FileDescriptorProto`` (what Confluent's registry answers for a
    Protobuf schema unless ``format=serialized`` is asked): syntax, package, imports, messages
    with nested types, enums, oneofs and map fields; options other than ``map_entry`` are
    left out."""
    lines = [f'syntax = "{fdp.syntax or "proto2"}";']
    if fdp.package:
        lines.append(f"package {fdp.package};")
    for dep in fdp.dependency:
        lines.append(f'import "{dep}";')
    lines.append("")
    scope = f".{fdp.package}" if fdp.package else ""
    for enum in fdp.enum_type:
        lines += _enum_text(enum, "")
    for message in fdp.message_type:
        lines += _message_text(message, "", scope, fdp.syntax == "proto3")
    return "\n".join(lines) + "\n"


def _enum_text(enum: Any, indent: str) -> list[str]:
    out = [f"{indent}enum {enum.name} {{"]
    out += [f"{indent}  {v.name} = {v.number};" for v in enum.value]
    return [*out, f"{indent}}}"]


def _type_text(field: Any, scope: str) -> str:
    if field.type in _TYPE_NAMES:
        return _TYPE_NAMES[field.type]
    name = field.type_name
    return name[len(scope) + 1:] if scope and name.startswith(scope + ".") else name


def _message_text(msg: Any, indent: str, scope: str, proto3: bool) -> list[str]:
    full = f"{scope}.{msg.name}"
    inner = indent + "  "
    out = [f"{indent}message {msg.name} {{"]
    entries = {f"{full}.{n.name}": n for n in msg.nested_type if n.options.map_entry}
    oneofs: dict[int, list[Any]] = {}
    for field in msg.field:
        if field.HasField("oneof_index") and not field.proto3_optional:
            oneofs.setdefault(field.oneof_index, []).append(field)
            continue
        entry = entries.get(field.type_name)
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            out.append(f"{inner}map<{_type_text(key, full)}, {_type_text(value, full)}> "
                       f"{field.name} = {field.number};")
            continue
        label = {3: "repeated ", 2: "required "}.get(field.label, "")
        if field.label == 1 and (not proto3 or field.proto3_optional):
            label = "optional "
        out.append(f"{inner}{label}{_type_text(field, full)} {field.name} = {field.number};")
    for index, fields in oneofs.items():
        out.append(f"{inner}oneof {msg.oneof_decl[index].name} {{")
        out += [f"{inner}  {_type_text(f, full)} {f.name} = {f.number};" for f in fields]
        out.append(f"{inner}}}")
    for nested in msg.nested_type:
        if not nested.options.map_entry:
            out += _message_text(nested, inner, full, proto3)
    for enum in msg.enum_type:
        out += _enum_text(enum, inner)
    return [*out, f"{indent}}}"]
