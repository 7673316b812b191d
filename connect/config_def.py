"""Connector configuration definitions, like Kafka's ``ConfigDef``.

A connector declares its keys once (type, default, validator, importance, documentation); the
worker uses the same definition to parse the connector's config and to answer
``PUT /connector-plugins/{plugin}/config/validate`` with one entry per key, so users see every
problem at once instead of the first one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class ConfigException(ValueError):
    """A config value is missing or invalid; the message names the key, the value and the rule."""


class ConfigType(str, Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(str, Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()

Validator = Callable[[str, Any], None]


class Range:
    """Numeric bounds validator: ``Range.at_least(1)``, ``Range.between(0, 100)``."""

    def __init__(self, low: float | None, high: float | None) -> None:
        self.low, self.high = low, high

    @classmethod
    def at_least(cls, low: float) -> Range:
        return cls(low, None)

    @classmethod
    def between(cls, low: float, high: float) -> Range:
        return cls(low, high)

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        if self.low is not None and value < self.low:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: Value must be at least {self.low}")
        if self.high is not None and value > self.high:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: Value must be no more than "
                f"{self.high}")


class ValidString:
    """The value must be one of a fixed set (case-sensitive unless ``ignore_case``)."""

    def __init__(self, allowed: Iterable[str], ignore_case: bool = False) -> None:
        self.allowed = list(allowed)
        self.ignore_case = ignore_case

    @classmethod
    def in_(cls, *allowed: str) -> ValidString:
        return cls(allowed)

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        options = [a.lower() for a in self.allowed] if self.ignore_case else self.allowed
        probe = str(value).lower() if self.ignore_case else str(value)
        if probe not in options:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: String must be one of: "
                + ", ".join(self.allowed))


def non_empty_string(name: str, value: Any) -> None:
    """Validator: a string that is not empty or blank."""
    if value is not None and not str(value).strip():
        raise ConfigException(
            f"Invalid value {value!r} for configuration {name}: String may not be empty")


@dataclass
class ConfigKey:
    """One declared key; :meth:`to_json` is Kafka's ``ConfigKeyInfo`` shape."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    width: str = "NONE"
    display_name: str | None = None
    dependents: list[str] = field(default_factory=list)
    recommended_values: list[Any] = field(default_factory=list)

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.value,
            "required": self.required,
            "default_value": None if self.required else _to_string(self.default),
            "importance": self.importance.value,
            "documentation": self.documentation,
            "group": self.group,
            "order_in_group": self.order_in_group,
            "width": self.width,
            "display_name": self.display_name or self.name,
            "dependents": list(self.dependents),
        }


@dataclass
class ConfigValue:
    """The validation result for one key (Kafka's ``ConfigValue``)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": None if self.value is None else _to_string(self.value),
            "recommended_values": list(self.recommended_values),
            "errors": list(self.errors),
            "visible": self.visible,
        }


def _to_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return str(value)


_INT_RANGES = {ConfigType.SHORT: 2**15, ConfigType.INT: 2**31, ConfigType.LONG: 2**63}


def parse_value(key: ConfigKey, value: Any) -> Any:
    """Convert a raw (usually string) value to the key's type, as Kafka's ``ConfigDef.parseType``."""
    if value is None:
        return None
    name, kind = key.name, key.type
    text = value.strip() if isinstance(value, str) else value
    try:
        if kind is ConfigType.BOOLEAN:
            if isinstance(text, bool):
                return text
            if str(text).lower() in ("true", "false"):
                return str(text).lower() == "true"
            raise ValueError("Expected value to be either true or false")
        if kind in _INT_RANGES:
            if isinstance(text, bool) or (isinstance(text, float) and not text.is_integer()):
                raise ValueError(f"Expected value to be a {kind.value.lower()} number")
            try:
                number = int(text)
            except ValueError:
                raise ValueError(f"Not a number of type {kind.value}") from None
            limit = _INT_RANGES[kind]
            if not -limit <= number < limit:
                raise ValueError(f"Not a number of type {kind.value}")
            return number
        if kind is ConfigType.DOUBLE:
            if isinstance(text, bool):
                raise ValueError("Expected value to be a double")
            try:
                return float(text)
            except ValueError:
                raise ValueError("Not a number of type DOUBLE") from None
        if kind is ConfigType.LIST:
            if isinstance(text, list | tuple):
                return [str(v).strip() for v in text]
            return [part.strip() for part in str(text).split(",") if part.strip()]
        return text if kind is ConfigType.CLASS and isinstance(text, type) else str(text)
    except (TypeError, ValueError) as exc:
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: {exc}") from None


class ConfigDef:
    """A set of declared keys; ``define`` is chainable like Kafka's builder."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {k.name: k for k in keys}

    def define(self, name: str, type: ConfigType | str, default: Any = NO_DEFAULT,
               validator: Validator | None = None, importance: Importance | str = Importance.MEDIUM,
               documentation: str = "", group: str | None = None, order_in_group: int = -1,
               display_name: str | None = None,
               recommended_values: list[Any] | None = None) -> ConfigDef:
        if name in self._keys:
            raise ConfigException(f"Configuration {name} is defined twice.")
        self._keys[name] = ConfigKey(
            name, ConfigType(type), default, validator, Importance(importance), documentation,
            group, order_in_group, display_name=display_name,
            recommended_values=list(recommended_values or []))
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new definition with ``other``'s keys added (ours win on a clash)."""
        merged = ConfigDef(other._keys.values())
        merged._keys.update(self._keys)
        return merged

    def config_keys(self) -> dict[str, ConfigKey]:
        return dict(self._keys)

    def names(self) -> list[str]:
        return list(self._keys)

    def groups(self) -> list[str]:
        seen: list[str] = []
        for key in self._keys.values():
            if key.group and key.group not in seen:
                seen.append(key.group)
        return seen

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values for every declared key; raise listing *all* problems if any."""
        values = self.validate(props)
        errors = [e for v in values for e in v.errors]
        if errors:
            raise ConfigException("; ".join(errors))
        return {v.name: v.value for v in values}

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """One :class:`ConfigValue` per declared key, errors included rather than raised."""
        results = []
        for key in self._keys.values():
            result = ConfigValue(key.name, recommended_values=list(key.recommended_values))
            raw = props.get(key.name, None)
            try:
                if key.name in props:
                    result.value = parse_value(key, raw)
                elif key.required:
                    result.errors.append(
                        f"Missing required configuration \"{key.name}\" which has no default value.")
                else:
                    result.value = parse_value(key, key.default)
                if not result.errors and key.validator is not None:
                    key.validator(key.name, result.value)
            except ConfigException as exc:
                result.value = raw
                result.errors.append(str(exc))
            except Exception as exc:  # a connector's own validator may raise anything
                result.value = raw
                result.errors.append(f"Invalid value {raw} for configuration {key.name}: {exc}")
            results.append(result)
        return results


__all__ = [
    "NO_DEFAULT", "ConfigDef", "ConfigException", "ConfigKey", "ConfigType", "ConfigValue",
    "Importance", "Range", "ValidString", "non_empty_string", "parse_value",
]
