"""Serdes that keep schemas in a schema registry: Avro, JSON Schema and Protobuf.

The bytes are Confluent's wire format, the one Confluent's serializers (Python and Java) use,
so they read what these write and the other way round: a magic byte ``0``, the
schema id as a 4-byte big-endian int, then for Protobuf the message indexes (zig-zag varints,
``[0]`` written as one ``0`` byte), then the payload (Avro binary, UTF-8 JSON, Protobuf).

The subject comes from the topic, as Kafka's ``Serializer.serialize(topic, data)`` does:
``TopicNameStrategy`` (``<topic>-key`` / ``<topic>-value``, the default), ``RecordNameStrategy``
(the record's full name) or ``TopicRecordNameStrategy`` (``<topic>-<name>``). Inner serdes
called without a topic (the old/new halves of a table's change) fall back to the record name.

Settings (keyword arguments, or Confluent's property names in ``config``):
``auto.register.schemas`` (default true) registers the serde's schema on first use;
``use.latest.version`` writes with the subject's latest registered schema instead;
``key.subject.name.strategy``/``value.subject.name.strategy``. fastavro, jsonschema and
protobuf are imported only when one of these serdes is built.
"""

from __future__ import annotations

import io
import json
import struct
import threading
from typing import Any

from .serde import Serde, SerializationError

MAGIC = 0
_ID = struct.Struct(">I")

STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_KNOWN = {
    "auto.register.schemas", "use.latest.version", "subject.name.strategy",
    "key.subject.name.strategy", "value.subject.name.strategy", "schema.registry.url",
    "is.key", "validate",
}


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise SerializationError(f"invalid value {value!r} for {key}: expected true or false")
    return text == "true"


def _client(registry_url: str | None, client: Any) -> Any:
    if client is not None:
        return client
    if not registry_url:
        raise SerializationError("a registry serde needs registry_url (schema.registry.url)")
    from .registry.client import SchemaRegistryClient

    return SchemaRegistryClient(registry_url)


class RegistrySerde(Serde[Any]):
    """Common part: subject naming, schema ids, the wire-format header."""

    schema_type = "AVRO"

    def __init__(self, *, registry_url: str | None = None, client: Any = None,
                 is_key: bool = False, subject_name_strategy: str | None = None,
                 auto_register_schemas: bool | None = None, use_latest_version: bool | None = None,
                 config: dict[str, Any] | None = None) -> None:
        config = {k.replace("_", "."): v for k, v in (config or {}).items()}
        unknown = sorted(set(config) - _KNOWN)
        if unknown:
            raise SerializationError(f"unknown registry serde setting(s) {unknown}; known: "
                                     f"{sorted(_KNOWN)}")
        self.is_key = _bool(config.get("is.key", is_key), "is.key")
        self.client = _client(registry_url or config.get("schema.registry.url"), client)
        strategy = subject_name_strategy or config.get(
            "key.subject.name.strategy" if self.is_key else "value.subject.name.strategy",
            config.get("subject.name.strategy", "TopicNameStrategy"))
        self.strategy = str(strategy).rsplit(".", 1)[-1]
        if self.strategy not in STRATEGIES:
            raise SerializationError(f"unknown subject name strategy {strategy!r}; use one of "
                                     f"{STRATEGIES}")
        self.auto_register = _bool(config.get("auto.register.schemas", True)
                                   if auto_register_schemas is None else auto_register_schemas,
                                   "auto.register.schemas")
        self.use_latest = _bool(config.get("use.latest.version", False)
                                if use_latest_version is None else use_latest_version,
                                "use.latest.version")
        self._ids: dict[str, tuple[int, Any]] = {}  # subject -> (id, writer schema)
        self._readers: dict[int, Any] = {}  # id -> decoder state for that writer schema
        self._lock = threading.Lock()
        self._last_topic: str | None = None

    # -- what subclasses provide ------------------------------------------------------------
    def schema_text(self) -> str | None:
        """The serde's own schema as registry text, or None (use the registry's)."""
        return None

    def record_name(self) -> str | None:
        return None

    def references(self) -> list[dict[str, Any]]:
        return []

    def writer_for(self, schema: str) -> Any:
        """Prepare what ``encode`` needs from registry schema text."""
        return schema

    def encode(self, writer: Any, value: Any) -> bytes:
        raise NotImplementedError

    def decode(self, schema_id: int, payload: memoryview) -> Any:
        raise NotImplementedError

    # -- subjects and ids -------------------------------------------------------------------
    def subject(self, topic: str | None) -> str:
        name = self.record_name()
        suffix = "-key" if self.is_key else "-value"
        if topic is None and name:  # an inner serde (a table's change halves): the record name
            return name
        topic = topic or self._last_topic
        if self.strategy == "TopicNameStrategy":
            if topic is None:
                raise SerializationError(f"{self.name} serde needs a topic to name its subject")
            return topic + suffix
        if not name:
            raise SerializationError(f"{self.strategy} needs a named schema (a record name)")
        if self.strategy == "RecordNameStrategy" or topic is None:
            return name
        return f"{topic}-{name}"

    def _schema_id(self, subject: str) -> tuple[int, Any]:
        with self._lock:
            hit = self._ids.get(subject)
        if hit is not None:
            return hit
        text = self.schema_text()
        if self.use_latest or text is None:
            latest = self.client.get_latest_version(subject)
            found = (latest.id, self.writer_for(latest.schema))
        elif self.auto_register:
            found = (self.client.register(subject, text, self.schema_type, self.references()),
                     self.writer_for(text))
        else:
            found = (self.client.lookup(subject, text, self.schema_type, self.references()).id,
                     self.writer_for(text))
        with self._lock:
            self._ids[subject] = found
        return found

    def serialize(self, topic: str | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if topic is not None:
            self._last_topic = topic
        try:
            subject = self.subject(topic)
            schema_id, writer = self._schema_id(subject)
            return bytes((MAGIC,)) + _ID.pack(schema_id) + self.encode(writer, value)
        except SerializationError as exc:
            raise SerializationError(f"{exc} (topic {topic!r})") from exc
        except Exception as exc:
            raise SerializationError(
                f"{self.name} serde cannot serialize {value!r} for topic {topic!r}: "
                f"{type(exc).__name__}: {exc}") from exc

    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        if data is None:
            return None
        view = memoryview(data)
        if len(view) < 5 or view[0] != MAGIC:
            raise SerializationError(
                f"{self.name} serde: {bytes(view[:8])!r} from topic {topic!r} is not in the "
                "schema registry wire format (magic byte 0 and a 4-byte schema id)")
        schema_id = _ID.unpack_from(view, 1)[0]
        try:
            return self.decode(schema_id, view[5:])
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                f"{self.name} serde cannot deserialize schema id {schema_id} from topic "
                f"{topic!r}: {type(exc).__name__}: {exc}") from exc

    def to_bytes(self, value: Any) -> bytes:  # pragma: no cover - serialize is overridden
        return self.serialize(None, value) or b""

    def from_bytes(self, data: bytes) -> Any:  # pragma: no cover
        return self.deserialize(None, data)


# -- Avro -------------------------------------------------------------------------------------

class AvroSerde(RegistrySerde):
    """Avro binary; generic records are dicts (or a pydantic model, if one was given).

    ``schema`` may be Avro schema text, a dict, a pydantic model class (its Avro schema is
    derived) or None (write with the subject's latest schema, read with the writer's schema).
    When a schema is given, reads resolve the writer's schema to it (Avro schema resolution).
    """

    schema_type = "AVRO"
    name = "avro"

    def __init__(self, schema: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import fastavro  # noqa: F401 - fail early with the import error

        self.model: type | None = None
        if isinstance(schema, type) and hasattr(schema, "model_fields"):
            from .serde_registry_schema import avro_schema

            self.model = schema
            schema = avro_schema(schema)
        if isinstance(schema, str):  # schema text, or a bare primitive name such as "string"
            schema = json.loads(schema) if schema.lstrip()[:1] in ("{", "[", '"') else schema
        self.schema = schema
        self._text = None if schema is None else json.dumps(schema)
        self._reader = None if schema is None else self._parse(schema)

    @staticmethod
    def _parse(schema: Any) -> Any:
        import fastavro

        return fastavro.parse_schema(schema)

    def schema_text(self) -> str | None:
        return self._text

    def record_name(self) -> str | None:
        s = self.schema
        if isinstance(s, dict) and "name" in s:
            ns = s.get("namespace")
            return s["name"] if "." in s["name"] or not ns else f"{ns}.{s['name']}"
        return None

    def writer_for(self, schema: str) -> Any:
        return self._parse(json.loads(schema))

    def encode(self, writer: Any, value: Any) -> bytes:
        import fastavro

        if self.model is not None and isinstance(value, self.model):
            value = value.model_dump()  # type: ignore[attr-defined]
        out = io.BytesIO()
        fastavro.schemaless_writer(out, writer, value)
        return out.getvalue()

    def decode(self, schema_id: int, payload: memoryview) -> Any:
        import fastavro

        writer = self._readers.get(schema_id)
        if writer is None:
            reg = self.client.get_schema(schema_id)
            named: dict[str, Any] = {}
            self._referenced(reg.references, named, set())
            writer = fastavro.parse_schema(json.loads(reg.schema), named_schemas=named)
            self._readers[schema_id] = writer
        value = fastavro.schemaless_reader(io.BytesIO(payload), writer, self._reader)
        if self.model is not None:
            return self.model.model_validate(value)  # type: ignore[attr-defined]
        return value

    def _referenced(self, references: Any, named: dict[str, Any], seen: set[str]) -> None:
        """Parse the schemas ``references`` name (depth first) into fastavro's named types."""
        import fastavro

        for ref in references or ():
            key = f"{ref['subject']}/{ref['version']}"
            if key in seen:
                continue
            seen.add(key)
            dep = self.client.get_version(ref["subject"], ref["version"])
            self._referenced(dep.references, named, seen)
            fastavro.parse_schema(json.loads(dep.schema), named_schemas=named)

    def __repr__(self) -> str:
        return f"Serdes.avro({self.record_name() or ''})"


# -- JSON Schema ------------------------------------------------------------------------------

class JsonSchemaSerde(RegistrySerde):
    """UTF-8 JSON validated against a JSON Schema (on write, and on read if ``validate``).

    ``schema`` may be JSON Schema text, a dict, a pydantic model class (``model_json_schema``;
    values read back as that model) or None (write with the subject's latest schema).
    """

    schema_type = "JSON"
    name = "json_schema"

    def __init__(self, schema: Any = None, *, validate: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import jsonschema  # noqa: F401

        self.model: type | None = None
        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            self.model = schema
            schema = schema.model_json_schema()  # type: ignore[attr-defined]
        if isinstance(schema, str):
            schema = json.loads(schema)
        self.schema = schema
        self.validate = validate
        self._text = None if schema is None else json.dumps(schema)

    def schema_text(self) -> str | None:
        return self._text

    def record_name(self) -> str | None:
        s = self.schema
        return s.get("title") if isinstance(s, dict) else None

    def writer_for(self, schema: str) -> Any:
        import jsonschema

        parsed = json.loads(schema)
        return jsonschema.validators.validator_for(parsed)(parsed)

    def encode(self, writer: Any, value: Any) -> bytes:
        if self.model is not None and isinstance(value, self.model):
            value = json.loads(value.model_dump_json())  # type: ignore[attr-defined]
        if self.validate:
            _validate(writer, value)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, schema_id: int, payload: memoryview) -> Any:
        value = json.loads(bytes(payload))
        if self.validate:
            validator = self._readers.get(schema_id)
            if validator is None:
                validator = self.writer_for(self.client.get_schema(schema_id).schema)
                self._readers[schema_id] = validator
            _validate(validator, value)
        if self.model is not None:
            return self.model.model_validate(value)  # type: ignore[attr-defined]
        return value


def _validate(validator: Any, value: Any) -> None:
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SerializationError(f"JSON Schema validation failed at {where}: {error.message}")


# -- Protobuf ---------------------------------------------------------------------------------

def _zigzag_varint(n: int, out: bytearray) -> None:
    z = (n << 1) ^ (n >> 63)
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _read_zigzag(view: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(view):
            raise SerializationError("truncated Protobuf message indexes")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def message_indexes(descriptor: Any) -> list[int]:
    """The path of a message in its file: top-level index, then nested indexes."""
    path = []
    while descriptor is not None:
        parent = descriptor.containing_type
        siblings = parent.nested_types if parent is not None else \
            list(descriptor.file.message_types_by_name.values())
        path.append([s.full_name for s in siblings].index(descriptor.full_name))
        descriptor = parent
    return path[::-1]


def encode_indexes(indexes: list[int]) -> bytes:
    if indexes == [0]:
        return b"\x00"
    out = bytearray()
    _zigzag_varint(len(indexes), out)
    for i in indexes:
        _zigzag_varint(i, out)
    return bytes(out)


def decode_indexes(view: memoryview) -> tuple[list[int], int]:
    count, pos = _read_zigzag(view, 0)
    if count == 0:
        return [0], pos
    out = []
    for _ in range(count):
        i, pos = _read_zigzag(view, pos)
        out.append(i)
    return out, pos


class ProtobufSerde(RegistrySerde):
    """Protobuf messages of ``message_class``; the schema is its file's descriptor, and each
    imported file is registered under its own file name and referenced (as Confluent does)."""

    schema_type = "PROTOBUF"

    def __init__(self, message_class: type, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import base64

        self.message_class = message_class
        descriptor = message_class.DESCRIPTOR  # type: ignore[attr-defined]
        self.name = f"protobuf({descriptor.full_name})"
        self._indexes = encode_indexes(message_indexes(descriptor))
        self._text = base64.standard_b64encode(descriptor.file.serialized_pb).decode()
        self._refs: list[dict[str, Any]] | None = None

    def schema_text(self) -> str | None:
        return self._text

    def record_name(self) -> str | None:
        return str(self.message_class.DESCRIPTOR.full_name)  # type: ignore[attr-defined]

    def references(self) -> list[dict[str, Any]]:
        if self._refs is None:
            self._refs = self._register_deps(self.message_class.DESCRIPTOR.file)  # type: ignore
        return self._refs

    def _register_deps(self, file: Any) -> list[dict[str, Any]]:
        import base64

        refs = []
        for dep in file.dependencies:
            if dep.name.startswith("google/protobuf/"):
                continue  # well-known types: built into registries, never referenced
            text = base64.standard_b64encode(dep.serialized_pb).decode()
            dep_refs = self._register_deps(dep)
            if self.auto_register and not self.use_latest:
                self.client.register(dep.name, text, "PROTOBUF", dep_refs)
            version = self.client.lookup(dep.name, text, "PROTOBUF", dep_refs).version
            refs.append({"name": dep.name, "subject": dep.name, "version": version})
        return refs

    def encode(self, writer: Any, value: Any) -> bytes:
        if not isinstance(value, self.message_class):
            raise SerializationError(f"{self.name} serde needs a {self.message_class.__name__}, "
                                     f"got {type(value).__name__}")
        return self._indexes + value.SerializeToString()

    def decode(self, schema_id: int, payload: memoryview) -> Any:
        _, pos = decode_indexes(payload)
        message = self.message_class()
        message.ParseFromString(bytes(payload[pos:]))
        return message

    def __repr__(self) -> str:
        return f"Serdes.{self.name}"
