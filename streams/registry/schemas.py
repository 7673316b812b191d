"""Parsed schemas of the three types the registry stores, and compatibility between them.

A schema is text plus a type (``AVRO`` when absent, as in Confluent's API) and references to
other registered schemas. Parsing validates it (fastavro, jsonschema, protobuf) and gives the
canonical form used to decide whether two registrations are "the same schema" (same id).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import errors

TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")


@dataclass
class ParsedSchema:
    schema_type: str
    text: str
    references: list[dict[str, Any]] = field(default_factory=list)
    parsed: Any = None  # type-specific: (tree, names) for Avro, dict for JSON, FDP for Protobuf
    canonical: str = ""

    def serialized(self) -> str:
        """Protobuf's ``format=serialized`` (base64 FileDescriptorProto); others: the text."""
        if self.schema_type == "PROTOBUF":
            from .protobuf_compat import to_serialized

            return to_serialized(self.parsed)
        return self.text


def parse(text: str, schema_type: str | None, references: Sequence[dict[str, Any]] = (),
          resolve: Callable[[dict[str, Any]], ParsedSchema] | None = None) -> ParsedSchema:
    """Validate ``text`` as a ``schema_type`` schema; raise 42201 naming what is wrong.

    ``resolve`` turns a reference ``{"name", "subject", "version"}`` into its parsed schema
    (Avro needs the named types of referenced schemas to parse).
    """
    kind = (schema_type or "AVRO").upper()
    if kind not in TYPES:
        raise errors.invalid_schema(f"unknown schemaType {schema_type!r}; use one of {TYPES}")
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("the 'schema' field must be a non-empty string")
    refs = [dict(r) for r in references or ()]
    for ref in refs:
        missing = [k for k in ("name", "subject", "version") if k not in ref]
        if missing:
            raise errors.invalid_schema(f"reference {ref} lacks {missing}")
    resolved = [resolve(r) for r in refs] if resolve else []
    try:
        if kind == "AVRO":
            from . import avro_compat

            named: dict[str, Any] = {}
            for dep in resolved:
                if dep.schema_type == "AVRO":
                    named.update(dep.parsed[1])
            parsed = avro_compat.parse(text, named)
            canonical = json.dumps(json.loads(text), separators=(",", ":"))
        elif kind == "JSON":
            from . import json_compat

            parsed = json_compat.parse(text)
            canonical = json.dumps(parsed, separators=(",", ":"))
        else:
            from . import protobuf_compat

            parsed = protobuf_compat.parse(text)
            canonical = protobuf_compat.to_serialized(protobuf_compat.normalized(parsed))
    except errors.RegistryError:
        raise
    except Exception as exc:  # each library has its own exception types
        raise errors.invalid_schema(f"{kind} schema: {_reason(exc)}") from None
    return ParsedSchema(kind, text, refs, parsed, canonical + json.dumps(refs, sort_keys=True))


def _reason(exc: Exception) -> str:
    """A parser's refusal in one line that says what is wrong: fastavro's UnknownType says only
    the type's name, jsonschema's errors run on for a dozen lines."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    if type(exc).__name__ == "UnknownType":
        return f"unknown type {text!r} (not a primitive type, nor a named type defined before)"
    if not text or " " not in text:
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text


def _pair(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    if reader.schema_type == "AVRO":
        from . import avro_compat

        return avro_compat.check(reader.parsed, writer.parsed)
    if reader.schema_type == "JSON":
        from . import json_compat

        return json_compat.check(reader.parsed, writer.parsed)
    from . import protobuf_compat

    return protobuf_compat.check(reader.parsed, writer.parsed)


def check_compatibility(level: str, new: ParsedSchema,
                        previous: Sequence[tuple[int, ParsedSchema]]) -> list[str]:
    """Why ``new`` is incompatible under ``level`` with ``previous`` ((version, schema), oldest
    first); empty when compatible. Non-transitive levels check the latest version only."""
    if level == "NONE" or not previous:
        return []
    targets = list(previous) if level.endswith("_TRANSITIVE") else [previous[-1]]
    base = level.removesuffix("_TRANSITIVE")
    messages: list[str] = []
    for version, old in reversed(targets):
        if old.schema_type != new.schema_type:
            messages.append(f"Incompatible because of different schema type: the new schema is "
                            f"{new.schema_type}, version {version} is {old.schema_type}")
            continue
        found: list[str] = []
        if base in ("BACKWARD", "FULL"):
            found += _pair(new, old)  # the new schema reads old data
        if base in ("FORWARD", "FULL"):
            found += _pair(old, new)  # old readers read new data
        if found:
            messages += found
            messages.append(f"{{oldSchemaVersion: {version}}}")
            messages.append(f"{{compatibility: '{level}'}}")
    return messages
