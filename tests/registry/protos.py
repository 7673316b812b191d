"""Protobuf message classes built at test time from .proto text (no generated code to commit)."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pool, message_factory

from streams.registry.proto_text import parse_proto


def message_classes(text: str, file_name: str) -> dict[str, Any]:
    """``{full name: class}`` for every top-level and nested message of ``text``."""
    fdp = parse_proto(text)
    fdp.name = file_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    file = pool.FindFileByName(file_name)
    out: dict[str, Any] = {}

    def walk(descriptors: Any) -> None:
        for d in descriptors:
            out[d.full_name] = message_factory.GetMessageClass(d)
            walk(d.nested_types)

    walk(file.message_types_by_name.values())
    return out
