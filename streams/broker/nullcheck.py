"""Reject null in fields the schema declares non-nullable, right after kio decodes a body.

kio's reader turns a null array (a compact length of 0 in flexible versions, a legacy count of
-1 in older ones) into ``None`` even where the message schema does not allow null, so handlers would crash on ``for t in None``. Kafka's
generated readers refuse such a body while parsing it ("non-nullable field X was serialized as
null", `MessageDataGenerator`), and the request never reaches a handler; this walk does the same.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import fields
from typing import Any


class NullFieldError(ValueError):
    """A field the schema declares non-nullable was null on the wire."""


# Per field: name, nullable, nested entity type (or None), is an array of entities.
_Plan = tuple[tuple[str, bool, Any, bool], ...]


@functools.cache
def _plan(entity_type: type) -> _Plan:
    hints = typing.get_type_hints(entity_type)
    out = []
    for f in fields(entity_type):
        hint = hints[f.name]
        nullable = False
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            nullable = len(args) != len(typing.get_args(hint))
            hint = args[0]
        nested, many = None, False
        if typing.get_origin(hint) is tuple:
            inner = typing.get_args(hint)[0]
            if hasattr(inner, "__dataclass_fields__"):
                nested, many = inner, True
        elif hasattr(hint, "__dataclass_fields__"):
            nested = hint
        out.append((f.name, nullable, nested, many))
    return tuple(out)


def check(entity: Any) -> None:
    """Raise NullFieldError naming the first non-nullable field that holds None."""
    for name, nullable, nested, many in _plan(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                raise NullFieldError(f"non-nullable field {name} was serialized as null")
            continue
        if nested is None:
            continue
        for item in value if many else (value,):
            check(item)
