"""Serdes: byte formats that match Kafka's, so Java applications read what we write.

A serde turns a Python value into bytes and back. ``None`` is always ``None`` (Kafka's null:
tombstones and null keys), never an encoded empty value.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Generic, TypeVar

import orjson

T = TypeVar("T")


class SerializationError(ValueError):
    """A value that cannot be written, or bytes that cannot be read, by a serde."""


class Serde(Generic[T]):
    """Base serde. Subclasses implement ``to_bytes`` and ``from_bytes`` for non-null values."""

    name = "serde"

    def serialize(self, topic: str | None, value: T | None) -> bytes | None:
        if value is None:
            return None
        try:
            return self.to_bytes(value)
        except SerializationError as exc:
            if topic is None:  # an inner serde: the outer one adds the topic
                raise
            raise SerializationError(f"{exc} (topic {topic!r})") from exc
        except Exception as exc:
            raise SerializationError(
                f"{self.name} serde cannot serialize {value!r} for topic {topic!r}: {exc}"
            ) from exc

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        if data is None:
            return None
        try:
            return self.from_bytes(data)
        except SerializationError as exc:
            if topic is None:
                raise
            raise SerializationError(f"{exc} (topic {topic!r})") from exc
        except Exception as exc:
            raise SerializationError(
                f"{self.name} serde cannot deserialize {bytes(data[:32])!r} from topic "
                f"{topic!r}: {exc}"
            ) from exc

    def to_bytes(self, value: T) -> bytes:
        raise NotImplementedError

    def from_bytes(self, data: bytes) -> T:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"


class StringSerde(Serde[str]):
    name = "string"

    def to_bytes(self, value: str) -> bytes:
        if not isinstance(value, str):
            raise SerializationError(f"string serde needs str, got {type(value).__name__}")
        return value.encode("utf-8")

    def from_bytes(self, data: bytes) -> str:
        return bytes(data).decode("utf-8")


class _StructSerde(Serde[Any]):
    fmt: struct.Struct
    kind: type = int

    def to_bytes(self, value: Any) -> bytes:
        if isinstance(value, bool) or not isinstance(value, self.kind | int):
            raise SerializationError(f"{self.name} serde needs a number, got {value!r}")
        return self.fmt.pack(value)

    def from_bytes(self, data: bytes) -> Any:
        if len(data) != self.fmt.size:
            raise SerializationError(
                f"{self.name} serde needs exactly {self.fmt.size} bytes, got {len(data)}"
            )
        return self.fmt.unpack(data)[0]


class IntegerSerde(_StructSerde):
    """4-byte big-endian signed, like Kafka's IntegerSerde."""

    name = "integer"
    fmt = struct.Struct(">i")


class LongSerde(_StructSerde):
    """8-byte big-endian signed, like Kafka's LongSerde."""

    name = "long"
    fmt = struct.Struct(">q")


class DoubleSerde(_StructSerde):
    """8-byte IEEE 754 big-endian, like Kafka's DoubleSerde."""

    name = "double"
    fmt = struct.Struct(">d")
    kind = float


class BytesSerde(Serde[bytes]):
    name = "bytes"

    def to_bytes(self, value: bytes) -> bytes:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise SerializationError(f"bytes serde needs bytes, got {type(value).__name__}")
        return bytes(value)

    def from_bytes(self, data: bytes) -> bytes:
        return bytes(data)


# orjson reads integers beyond 64 bits as floats; such a number has a run of 19 digits or
# more. Found by mapping digits to "0" and the rest to " " (bytes.translate and a substring
# search cost a third of what a regular expression does).
_DIGITS_TO_ZERO = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_DIGIT_RUN = b"0" * 19


class JsonSerde(Serde[Any]):
    """UTF-8 JSON, compact separators (what Kafka Connect's JsonConverter without schemas reads).

    orjson does the work (several times faster than ``json`` on the per-record hot path); the
    standard library takes over wherever orjson would change a value: integers beyond 64 bits
    (orjson reads them as floats, refuses to write them), NaN and infinities (orjson writes
    null), tuple subclasses, and input orjson refuses (``NaN`` literals; truly bad input then
    fails with json's message). Floats may be spelled differently from ``json.dumps``
    (0.000015 for 1.5e-05); they read back to the same value. Types json cannot write but
    orjson can (datetime, UUID, dataclasses) are written by orjson.
    """

    name = "json"

    def to_bytes(self, value: Any) -> bytes:
        try:
            data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # e.g. an int beyond 64 bits, a namedtuple: json's rules decide
            return self._stdlib_dumps(value)
        if b"null" in data and value is not None:  # maybe a NaN or infinity orjson nulled
            return self._stdlib_dumps(value)
        return data

    @staticmethod
    def _stdlib_dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def from_bytes(self, data: bytes) -> Any:
        if _LONG_DIGIT_RUN not in bytes(data).translate(_DIGITS_TO_ZERO):
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass  # json.loads reads what it reads (NaN), or raises its own message
        return json.loads(bytes(data).decode("utf-8"))


class PydanticSerde(Serde[Any]):
    """JSON bytes validated into a pydantic model on the way in."""

    def __init__(self, model: type) -> None:
        self.model = model
        self.name = f"pydantic({model.__name__})"

    def to_bytes(self, value: Any) -> bytes:
        if isinstance(value, self.model):
            return value.model_dump_json().encode("utf-8")  # type: ignore[attr-defined]
        return self.model.model_validate(value).model_dump_json().encode("utf-8")  # type: ignore[attr-defined]

    def from_bytes(self, data: bytes) -> Any:
        return self.model.model_validate_json(bytes(data))  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Serdes.pydantic({self.model.__name__})"


class InternalSerde(Serde[Any]):
    """Self-describing format for internal topics and stores whose serde nobody gave.

    Repartition topics, changelogs and stores need *some* serde even when the user configured
    none (e.g. the key produced by ``group_by``). This one tags each value with its type (one
    byte) so any process reads back exactly what was written. Configure ``default.key.serde`` /
    ``default.value.serde`` or pass serdes to get Kafka's formats instead.
    """

    name = "internal"
    _LONG = struct.Struct(">q")
    _DOUBLE = struct.Struct(">d")

    def to_bytes(self, value: Any) -> bytes:
        if isinstance(value, bytes | bytearray | memoryview):
            return b"b" + bytes(value)
        if isinstance(value, str):
            return b"s" + value.encode("utf-8")
        if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
            return b"i" + self._LONG.pack(value)
        if isinstance(value, float):
            return b"d" + self._DOUBLE.pack(value)
        if hasattr(value, "model_dump_json"):
            raise SerializationError(
                f"no serde for {type(value).__name__}: pass Serdes.pydantic(...) explicitly"
            )
        return b"j" + JsonSerde().to_bytes(value)

    def from_bytes(self, data: bytes) -> Any:
        data = bytes(data)
        tag, body = data[:1], data[1:]
        if tag == b"b":
            return body
        if tag == b"s":
            return body.decode("utf-8")
        if tag == b"i":
            return self._LONG.unpack(body)[0]
        if tag == b"d":
            return self._DOUBLE.unpack(body)[0]
        if tag == b"j":
            return json.loads(body)
        raise SerializationError(f"not written by the internal serde (tag {tag!r})")


class Serdes:
    """Factories named like Kafka's ``Serdes``."""

    @staticmethod
    def string() -> StringSerde:
        return StringSerde()

    @staticmethod
    def integer() -> IntegerSerde:
        return IntegerSerde()

    @staticmethod
    def long() -> LongSerde:
        return LongSerde()

    @staticmethod
    def double() -> DoubleSerde:
        return DoubleSerde()

    @staticmethod
    def bytes() -> BytesSerde:
        return BytesSerde()

    @staticmethod
    def json() -> JsonSerde:
        return JsonSerde()

    @staticmethod
    def pydantic(model: type) -> PydanticSerde:
        return PydanticSerde(model)

    @staticmethod
    def avro(schema: Any = None, *, registry_url: str | None = None, **kwargs: Any) -> Serde[Any]:
        """Avro in Confluent's wire format, schemas in a registry (see streams.serde_registry)."""
        from .serde_registry import AvroSerde

        return AvroSerde(schema, registry_url=registry_url, **kwargs)

    @staticmethod
    def json_schema(schema: Any = None, *, registry_url: str | None = None,
                    **kwargs: Any) -> Serde[Any]:
        """JSON validated by a registered JSON Schema, in Confluent's wire format."""
        from .serde_registry import JsonSchemaSerde

        return JsonSchemaSerde(schema, registry_url=registry_url, **kwargs)

    @staticmethod
    def protobuf(message_class: type, *, registry_url: str | None = None,
                 **kwargs: Any) -> Serde[Any]:
        """Protobuf messages in Confluent's wire format (with message indexes)."""
        from .serde_registry import ProtobufSerde

        return ProtobufSerde(message_class, registry_url=registry_url, **kwargs)

    @staticmethod
    def windowed(inner: Serde[Any], window_size: int | None = None) -> Serde[Any]:
        from .windowing import TimeWindowedSerde

        return TimeWindowedSerde(inner, window_size)

    @staticmethod
    def session_windowed(inner: Serde[Any]) -> Serde[Any]:
        from .windowing import SessionWindowedSerde

        return SessionWindowedSerde(inner)


def resolve_serde(value: Any) -> Serde[Any] | None:
    """Accept a Serde, a serde name from a config file ("string", "json", ...) or None."""
    if value is None or isinstance(value, Serde):
        return value
    if isinstance(value, str):
        short = value.rsplit(".", 1)[-1].lower()
        for suffix in ("serde", "$", "serdes"):
            short = short.removesuffix(suffix)
        short = short.split("$")[-1]
        factory = getattr(Serdes, short, None)
        if factory is not None and short not in ("windowed", "pydantic", "session_windowed",
                                                 "avro", "json_schema", "protobuf"):
            return factory()
        raise SerializationError(
            f"unknown serde {value!r}; use one of string, integer, long, double, bytes, json"
        )
    raise SerializationError(f"not a serde: {value!r}")
