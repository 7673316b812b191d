"""A tiny typed config reader shared by the SMTs and predicates.

Each transform declares ``CONFIG = {key: ConfigKey(...)}``; :func:`parse_config` turns the raw
string settings into typed values, fills defaults, and raises :class:`ConfigError` naming the key
for a missing required setting, a bad value, or an unknown key (with the nearest known key).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from streams.config import ConfigError

REQUIRED = object()  # marker: the setting has no default


@dataclass(frozen=True)
class ConfigKey:
    """One setting: its type name (Kafka's ConfigDef type), default, importance and doc."""

    type: str = "string"  # string | int | long | boolean | list | password | class
    default: Any = REQUIRED
    importance: str = "medium"
    documentation: str = ""
    validator: Callable[[str, Any], None] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type.upper(),
            "default": None if self.default is REQUIRED else self.default,
            "required": self.default is REQUIRED,
            "importance": self.importance.upper(),
            "documentation": self.documentation,
        }


def one_of(*allowed: str, case_insensitive: bool = False) -> Callable[[str, Any], None]:
    def check(key: str, value: Any) -> None:
        v = value.lower() if case_insensitive and isinstance(value, str) else value
        options = [a.lower() for a in allowed] if case_insensitive else list(allowed)
        if v not in options:
            raise ConfigError(
                f"invalid value {value!r} for configuration {key}: must be one of {list(allowed)}")

    return check


def non_empty(key: str, value: Any) -> None:
    if value is None or (isinstance(value, str | list) and not value):
        raise ConfigError(f"invalid value {value!r} for configuration {key}: must not be empty")


def _convert(key: str, spec: ConfigKey, raw: Any) -> Any:
    if raw is None:
        return None
    t = spec.type
    try:
        if t == "boolean":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise ValueError("expected true or false")
            return text == "true"
        if t in ("int", "long"):
            if isinstance(raw, bool):
                raise ValueError("expected an integer")
            return int(str(raw).strip())
        if t == "list":
            if isinstance(raw, list | tuple):
                return [str(x).strip() for x in raw if str(x).strip()]
            return [p.strip() for p in str(raw).split(",") if p.strip()]
        return raw if isinstance(raw, str) else str(raw)
    except ValueError as exc:
        raise ConfigError(f"invalid value {raw!r} for configuration {key}: {exc}") from None


def parse_config(
    owner: str, defs: Mapping[str, ConfigKey], configs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Typed settings for ``owner`` (a transform name used in error messages)."""
    configs = dict(configs or {})
    for key in configs:
        if key not in defs:
            guess = difflib.get_close_matches(key, list(defs), n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else ""
            known = ", ".join(sorted(defs)) or "none"
            raise ConfigError(f"{owner}: unknown config key '{key}'{hint} (known: {known})")
    out: dict[str, Any] = {}
    for key, spec in defs.items():
        if key in configs:
            value = _convert(key, spec, configs[key])
        elif spec.default is REQUIRED:
            raise ConfigError(f"{owner}: missing required configuration \"{key}\" which has no "
                              f"default value")
        else:
            value = spec.default
        if spec.validator is not None and key in configs:
            spec.validator(key, value)
        out[key] = value
    return out
