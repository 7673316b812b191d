"""Connect's data model: schemas, structs and logical types, like ``org.apache.kafka.connect.data``.

Connectors and converters exchange values together with an optional :class:`Schema`, so a sink can
know the shape of what it receives even when the bytes on the wire carry no type information.
Python types stand in for Java's: ``int`` for INT8..INT64, ``float`` for FLOAT32/FLOAT64, ``bool``,
``str``, ``bytes``, ``list`` (ARRAY), ``dict`` (MAP) and :class:`Struct` (STRUCT). Logical types
use ``decimal.Decimal``, ``datetime.date``, ``datetime.time`` and ``datetime.datetime``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, NamedTuple


class DataException(ValueError):
    """A value does not fit its schema, or data cannot be converted (Kafka's DataException)."""


class SchemaType(str, Enum):
    """Schema types; the value is Kafka's lower-case type name (``Schema.Type.getName()``)."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (SchemaType.ARRAY, SchemaType.MAP, SchemaType.STRUCT)

    @classmethod
    def parse(cls, name: str | SchemaType) -> SchemaType:
        """Accept ``int32``, ``INT32`` or a SchemaType; raise DataException otherwise."""
        if isinstance(name, SchemaType):
            return name
        try:
            return cls(str(name).strip().lower())
        except ValueError:
            allowed = ", ".join(t.value for t in cls)
            raise DataException(f"unknown schema type {name!r}; allowed: {allowed}") from None


Type = SchemaType  # Kafka spells it Schema.Type

_INT_RANGES = {
    SchemaType.INT8: (-(2**7), 2**7 - 1),
    SchemaType.INT16: (-(2**15), 2**15 - 1),
    SchemaType.INT32: (-(2**31), 2**31 - 1),
    SchemaType.INT64: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, eq=True)
class Field:
    """One field of a STRUCT schema: its name, position and schema."""

    name: str
    index: int
    schema: Schema


class Schema:
    """An immutable Connect schema (Kafka's ``ConnectSchema``).

    ``fields`` is only set for STRUCT, ``key_schema`` only for MAP and ``value_schema`` for MAP and
    ARRAY. Two schemas are equal when every attribute is equal, as in Kafka.
    """

    # Constants are assigned below the class: Schema.INT8_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA, ...
    INT8_SCHEMA: ClassVar[Schema]
    INT16_SCHEMA: ClassVar[Schema]
    INT32_SCHEMA: ClassVar[Schema]
    INT64_SCHEMA: ClassVar[Schema]
    FLOAT32_SCHEMA: ClassVar[Schema]
    FLOAT64_SCHEMA: ClassVar[Schema]
    BOOLEAN_SCHEMA: ClassVar[Schema]
    STRING_SCHEMA: ClassVar[Schema]
    BYTES_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT8_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT16_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_BOOLEAN_SCHEMA: ClassVar[Schema]
    OPTIONAL_STRING_SCHEMA: ClassVar[Schema]
    OPTIONAL_BYTES_SCHEMA: ClassVar[Schema]
    Type: ClassVar[type[SchemaType]] = SchemaType

    __slots__ = (
        "type", "optional", "default", "name", "version", "doc", "parameters",
        "fields", "_fields_by_name", "key_schema", "value_schema",
    )

    def __init__(
        self,
        type: SchemaType | str,
        optional: bool = False,
        default: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: Iterable[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        t = SchemaType.parse(type)
        set_ = object.__setattr__
        set_(self, "type", t)
        set_(self, "optional", bool(optional))
        set_(self, "name", name)
        set_(self, "version", version)
        set_(self, "doc", doc)
        set_(self, "parameters", dict(parameters) if parameters else None)
        field_list = tuple(fields) if fields is not None else ()
        if field_list and t is not SchemaType.STRUCT:
            raise DataException(f"only STRUCT schemas have fields, not {t.name}")
        set_(self, "fields", field_list if t is SchemaType.STRUCT else ())
        set_(self, "_fields_by_name", {f.name: f for f in field_list})
        if key_schema is not None and t is not SchemaType.MAP:
            raise DataException("only MAP schemas have a key schema")
        if value_schema is not None and t not in (SchemaType.MAP, SchemaType.ARRAY):
            raise DataException("only MAP and ARRAY schemas have a value schema")
        set_(self, "key_schema", key_schema)
        set_(self, "value_schema", value_schema)
        set_(self, "default", None)
        if default is not None:
            validate_value(self, default)
        set_(self, "default", default)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Schema is immutable; use SchemaBuilder or schema_update()")

    # -- Kafka-style accessors -------------------------------------------------------------------
    def field(self, name: str) -> Field | None:
        """The STRUCT field called ``name``, or None; raises for a non-STRUCT schema."""
        if self.type is not SchemaType.STRUCT:
            raise DataException(f"cannot look up fields on a non-struct {self.type.name} schema")
        return self._fields_by_name.get(name)

    @property
    def default_value(self) -> Any:
        return self.default

    @property
    def is_optional(self) -> bool:
        return self.optional

    def validate_value(self, value: Any) -> None:
        validate_value(self, value)

    def _key(self) -> tuple[Any, ...]:
        params = tuple(sorted(self.parameters.items())) if self.parameters else None
        return (
            self.type, self.optional, _hashable(self.default), self.name, self.version,
            self.doc, params, self.fields, self.key_schema, self.value_schema,
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.type, self.optional, self.name, self.version, len(self.fields)))

    def __repr__(self) -> str:
        parts = [self.type.name]
        if self.name:
            parts.append(f"name={self.name}")
        if self.optional:
            parts.append("optional")
        if self.fields:
            parts.append("fields=[" + ", ".join(f.name for f in self.fields) + "]")
        return f"Schema{{{', '.join(parts)}}}"


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


for _t in SchemaType:
    if _t.is_primitive:
        setattr(Schema, f"{_t.name}_SCHEMA", Schema(_t))
        setattr(Schema, f"OPTIONAL_{_t.name}_SCHEMA", Schema(_t, optional=True))


class SchemaBuilder:
    """Fluent builder for schemas (Kafka's ``SchemaBuilder`` with snake_case names).

    >>> schema = (SchemaBuilder.struct().name("com.example.User")
    ...           .field("id", Schema.INT64_SCHEMA).field("email", Schema.OPTIONAL_STRING_SCHEMA)
    ...           .build())
    """

    def __init__(self, type: SchemaType | str) -> None:
        self.type = SchemaType.parse(type)
        self._optional: bool | None = None
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] = {}
        self._fields: dict[str, Field] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories -------------------------------------------------------------------------------
    @classmethod
    def int8(cls) -> SchemaBuilder:
        return cls(SchemaType.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        return cls(SchemaType.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        return cls(SchemaType.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        return cls(SchemaType.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        return cls(SchemaType.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        return cls(SchemaType.FLOAT64)

    @classmethod
    def bool(cls) -> SchemaBuilder:
        return cls(SchemaType.BOOLEAN)

    boolean = bool

    @classmethod
    def string(cls) -> SchemaBuilder:
        return cls(SchemaType.STRING)

    @classmethod
    def bytes(cls) -> SchemaBuilder:
        return cls(SchemaType.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        return cls(SchemaType.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema) -> SchemaBuilder:
        builder = cls(SchemaType.ARRAY)
        builder._value_schema = value_schema
        return builder

    @classmethod
    def map(cls, key_schema: Schema, value_schema: Schema) -> SchemaBuilder:
        builder = cls(SchemaType.MAP)
        builder._key_schema = key_schema
        builder._value_schema = value_schema
        return builder

    @classmethod
    def type_of(cls, type: SchemaType | str) -> SchemaBuilder:
        return cls(type)

    # -- fluent setters (each may be set only once, as in Kafka) --------------------------------
    def _check_unset(self, what: str, current: Any, new: Any) -> None:
        if current is not None and current != new:
            raise DataException(f"invalid SchemaBuilder call: {what} has already been set")

    def optional(self) -> SchemaBuilder:
        self._check_unset("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        self._check_unset("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        self._check_unset("default", self._default, value)
        validate_value(self.build(_skip_default=True), value)
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        self._check_unset("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        self._check_unset("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        self._check_unset("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        self._parameters[key] = value
        return self

    def parameters(self, params: Mapping[str, str]) -> SchemaBuilder:
        self._parameters.update(params)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Add a STRUCT field; names must be unique."""
        if self.type is not SchemaType.STRUCT:
            raise DataException("cannot add fields to a non-struct schema")
        if not name:
            raise DataException("field name cannot be empty")
        if name in self._fields:
            raise DataException(f"cannot create field because of field name duplication {name}")
        if isinstance(schema, SchemaBuilder):
            schema = schema.build()
        self._fields[name] = Field(name, len(self._fields), schema)
        return self

    @property
    def fields(self) -> tuple[Field, ...]:
        return tuple(self._fields.values())

    def get_field(self, name: str) -> Field | None:
        return self._fields.get(name)

    @property
    def is_optional(self) -> bool:
        return bool(self._optional)

    def build(self, _skip_default: bool = False) -> Schema:
        return Schema(
            self.type,
            optional=bool(self._optional),
            default=None if _skip_default else self._default,
            name=self._name,
            version=self._version,
            doc=self._doc,
            parameters=self._parameters or None,
            fields=self._fields.values() if self.type is SchemaType.STRUCT else None,
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    schema = build


def schema_update(schema: Schema, **changes: Any) -> Schema:
    """A copy of ``schema`` with some attributes replaced (used by SetSchemaMetadata, Cast, ...)."""
    attrs = {
        "type": schema.type, "optional": schema.optional, "default": schema.default,
        "name": schema.name, "version": schema.version, "doc": schema.doc,
        "parameters": schema.parameters,
        "fields": schema.fields if schema.type is SchemaType.STRUCT else None,
        "key_schema": schema.key_schema, "value_schema": schema.value_schema,
    }
    attrs.update(changes)
    return Schema(**attrs)


def builder_from(schema: Schema, copy_optional: bool = False) -> SchemaBuilder:
    """A builder with ``schema``'s name, version, doc and parameters but no fields.

    Like Kafka's ``SchemaUtil.copySchemaBasics``, optionality is not copied unless asked.
    """
    builder = SchemaBuilder(schema.type)
    builder._name = schema.name
    builder._version = schema.version
    builder._doc = schema.doc
    if schema.parameters:
        builder._parameters = dict(schema.parameters)
    builder._key_schema = schema.key_schema
    builder._value_schema = schema.value_schema
    if copy_optional and schema.optional:
        builder.optional()
    return builder


# -- logical types -----------------------------------------------------------------------------
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
MILLIS_PER_DAY = 24 * 60 * 60 * 1000


class Decimal:
    """Arbitrary-precision decimal stored as BYTES: the unscaled value, big-endian two's complement.

    The scale is the schema parameter ``scale``, as in Kafka.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return (SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME)
                .parameter(Decimal.SCALE_FIELD, str(scale)).version(1))

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale_of(schema: Schema) -> int:
        params = schema.parameters or {}
        if Decimal.SCALE_FIELD not in params:
            raise DataException("invalid Decimal schema: scale parameter not found")
        return int(params[Decimal.SCALE_FIELD])

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        scale = Decimal.scale_of(schema)
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int):
            raise DataException(f"cannot encode non-finite decimal {value}")
        if -exponent != scale:
            raise DataException(
                f"decimal {value} has scale {-exponent}, the schema requires scale {scale}")
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return _twos_complement(unscaled)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        return _decimal.Decimal(unscaled).scaleb(-Decimal.scale_of(schema))


def _twos_complement(n: int) -> bytes:
    """Minimal big-endian two's complement, like Java's ``BigInteger.toByteArray()``."""
    length = (n + (n < 0)).bit_length() // 8 + 1
    return n.to_bytes(length, "big", signed=True)


class Date:
    """A calendar date stored as INT32 days since the Unix epoch."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.date) -> int:
        if isinstance(value, _dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(_dt.UTC)
            if value.time() != _dt.time(0):
                raise DataException(
                    "Kafka Connect Date type should not have any time fields set to non-zero values")
            value = value.date()
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.date:
        return _EPOCH_DATE + _dt.timedelta(days=value)


class Time:
    """A time of day stored as INT32 milliseconds since midnight."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.time) -> int:
        if isinstance(value, _dt.datetime):
            value = value.astimezone(_dt.UTC).time() if value.tzinfo else value.time()
        ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        return ms + value.microsecond // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.time:
        if value < 0 or value >= MILLIS_PER_DAY:
            raise DataException(
                "Time values must use number of milliseconds greater than 0 and less than 86400000")
        seconds, ms = divmod(value, 1000)
        minutes, sec = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        return _dt.time(hours, minute, sec, ms * 1000)


class Timestamp:
    """An instant stored as INT64 milliseconds since the Unix epoch (UTC)."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(milliseconds=value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_TYPES: dict[str, type] = {
    Decimal.LOGICAL_NAME: Decimal,
    Date.LOGICAL_NAME: Date,
    Time.LOGICAL_NAME: Time,
    Timestamp.LOGICAL_NAME: Timestamp,
}


def _logical_python_type(name: str | None) -> tuple[type, ...] | None:
    if name == Decimal.LOGICAL_NAME:
        return (_decimal.Decimal,)
    if name == Date.LOGICAL_NAME:
        return (_dt.date,)
    if name == Time.LOGICAL_NAME:
        return (_dt.time, _dt.datetime)
    if name == Timestamp.LOGICAL_NAME:
        return (_dt.datetime,)
    return None


# -- validation --------------------------------------------------------------------------------
def validate_value(schema: Schema | None, value: Any, field_name: str | None = None) -> None:
    """Raise DataException when ``value`` does not match ``schema`` (Kafka's validateValue)."""
    where = f" for field: \"{field_name}\"" if field_name else ""
    if schema is None:
        return
    if value is None:
        if not schema.optional and schema.default is None:
            raise DataException(f"invalid value: null used for required field{where}, "
                                f"schema type: {schema.type.name}")
        return
    logical = _logical_python_type(schema.name)
    if logical is not None:
        if not isinstance(value, logical):
            raise DataException(f"invalid Java object for schema \"{schema.name}\" with type "
                                f"{schema.type.name}: {type(value).__name__}{where}")
        return
    t = schema.type
    ok: bool
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    elif t in (SchemaType.FLOAT32, SchemaType.FLOAT64):
        ok = isinstance(value, float | int) and not isinstance(value, bool)
    elif t is SchemaType.BOOLEAN:
        ok = isinstance(value, bool)
    elif t is SchemaType.STRING:
        ok = isinstance(value, str)
    elif t is SchemaType.BYTES:
        ok = isinstance(value, bytes | bytearray | memoryview)
    elif t is SchemaType.ARRAY:
        ok = isinstance(value, list | tuple)
        if ok:
            for item in value:
                validate_value(schema.value_schema, item, field_name)
    elif t is SchemaType.MAP:
        ok = isinstance(value, Mapping)
        if ok:
            for k, v in value.items():
                validate_value(schema.key_schema, k, field_name)
                validate_value(schema.value_schema, v, field_name)
    else:  # STRUCT
        ok = isinstance(value, Struct)
        if ok and value.schema != schema:
            raise DataException(f"Struct schemas do not match{where}")
        if ok:
            value.validate()
    if not ok:
        raise DataException(f"invalid Java object for schema with type {t.name}: "
                            f"{type(value).__name__}{where}")


class Struct:
    """A record value with a STRUCT schema: fields are set with :meth:`put` and read with :meth:`get`.

    ``put`` validates each value against its field schema; :meth:`validate` checks that every
    required field is set, which converters call before writing.
    """

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not SchemaType.STRUCT:
            raise DataException("not a struct schema: " + repr(schema))
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields)

    def _lookup(self, field: str | Field) -> Field:
        name = field.name if isinstance(field, Field) else field
        found = self.schema.field(name)
        if found is None:
            raise DataException(f"{name} is not a valid field name")
        if isinstance(field, Field) and found != field:
            raise DataException(f"Field {name} does not belong to this struct's schema")
        return found

    def put(self, field: str | Field, value: Any) -> Struct:
        """Set a field (validated against its schema); returns self for chaining."""
        f = self._lookup(field)
        validate_value(f.schema, value, f.name)
        self._values[f.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        """The field's value, or its schema default when unset."""
        f = self._lookup(field)
        value = self._values[f.index]
        if value is None and f.schema.default is not None:
            return f.schema.default
        return value

    def get_without_default(self, field: str | Field) -> Any:
        return self._values[self._lookup(field).index]

    def validate(self) -> None:
        """Raise DataException if a required field has no value (nor default)."""
        for f in self.schema.fields:
            validate_value(f.schema, self._values[f.index], f.name)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts/lists, e.g. for schemaless JSON output."""
        return {f.name: _plain(self.get(f)) for f in self.schema.fields}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self.schema == other.schema and self._values == other._values

    def __hash__(self) -> int:
        return hash((self.schema, tuple(_hashable(v) for v in self._values)))

    def __repr__(self) -> str:
        inner = ",".join(f"{f.name}={self._values[f.index]!r}" for f in self.schema.fields)
        return f"Struct{{{inner}}}"


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


class SchemaAndValue(NamedTuple):
    """A value together with its (possibly absent) schema, as converters return them."""

    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]


# -- schema inference and string parsing (Kafka's Values) -------------------------------------
def infer_schema(value: Any) -> Schema | None:
    """The schema Kafka's ``Values.inferSchema`` gives a schemaless value, or None if it cannot.

    Lists and maps are inferred only when non-empty and homogeneous. Python ``int`` maps to INT64
    unless it fits INT32 (Java code usually hands Integers there).
    """
    if value is None:
        return None
    if isinstance(value, Struct):
        return value.schema
    if isinstance(value, bool):
        return Schema.BOOLEAN_SCHEMA
    if isinstance(value, int):
        lo, hi = _INT_RANGES[SchemaType.INT32]
        return Schema.INT32_SCHEMA if lo <= value <= hi else Schema.INT64_SCHEMA
    if isinstance(value, float):
        return Schema.FLOAT64_SCHEMA
    if isinstance(value, str):
        return Schema.STRING_SCHEMA
    if isinstance(value, bytes | bytearray | memoryview):
        return Schema.BYTES_SCHEMA
    if isinstance(value, _decimal.Decimal):
        return Decimal.schema(max(0, -int(value.as_tuple().exponent)))
    if isinstance(value, _dt.datetime):
        return Timestamp.SCHEMA
    if isinstance(value, _dt.date):
        return Date.SCHEMA
    if isinstance(value, _dt.time):
        return Time.SCHEMA
    if isinstance(value, list | tuple):
        if not value:
            return None
        schemas = {infer_schema(v) for v in value}
        if len(schemas) != 1 or None in schemas:
            return None
        return SchemaBuilder.array(schemas.pop()).build()
    if isinstance(value, Mapping):
        if not value:
            return None
        keys = {infer_schema(k) for k in value}
        vals = {infer_schema(v) for v in value.values()}
        if len(keys) != 1 or len(vals) != 1 or None in keys or None in vals:
            return None
        return SchemaBuilder.map(keys.pop(), vals.pop()).build()
    return None


def smallest_int_schema(n: int) -> Schema | None:
    """INT8/16/32/64 — the smallest that holds ``n`` (how Kafka's Values parses numbers)."""
    for t in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
        lo, hi = _INT_RANGES[t]
        if lo <= n <= hi:
            return Schema(t)
    return None


def value_to_string(schema: Schema | None, value: Any) -> str | None:
    """Render a value as text the way Kafka's ``Values.convertToString`` does.

    Booleans are ``true``/``false``, bytes are base64, structs/maps/arrays use JSON-like syntax.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if schema is not None and schema.name in LOGICAL_TYPES and schema.name != Decimal.LOGICAL_NAME:
        if isinstance(value, _dt.datetime):
            return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
        if isinstance(value, _dt.date):
            return value.isoformat()
        if isinstance(value, _dt.time):
            return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, float):
        return _java_double_str(value)
    if isinstance(value, int | _decimal.Decimal):
        return str(value)
    if isinstance(value, Struct):
        inner = ",".join(
            f"\"{f.name}\":{_embedded_string(f.schema, value.get(f))}" for f in value.schema.fields)
        return "{" + inner + "}"
    if isinstance(value, Mapping):
        ks = schema.key_schema if schema else None
        vs = schema.value_schema if schema else None
        inner = ",".join(f"{_embedded_string(ks, k)}:{_embedded_string(vs, v)}"
                         for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        vs = schema.value_schema if schema else None
        return "[" + ",".join(_embedded_string(vs, v) for v in value) + "]"
    return str(value)


def _embedded_string(schema: Schema | None, value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value_to_string(schema, value) or "null"


def _java_double_str(value: float) -> str:
    """Java's ``Double.toString`` for ordinary values: ``1.0``, ``0.5``, ``1.0E10``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if ("." in text or "e" in text) else text + ".0"
    exp = int(f"{value:e}".partition("e")[2])
    mantissa = repr(value / 10**exp)
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{exp}"
