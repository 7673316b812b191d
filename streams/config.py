"""Shared base for every component's configuration model.

Kafka users write keys in dotted form (``application.id``); Python users write ``application_id``.
Both are accepted. An unknown key is an error naming the key and the nearest known one, because a
typo in a config file must never be silently ignored.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator


class ConfigError(ValueError):
    """A configuration problem, phrased for the user: the key, the value, what is allowed."""


def _python_key(key: str) -> str:
    return key.strip().replace(".", "_").replace("-", "_")


class KafkaConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @model_validator(mode="before")
    @classmethod
    def _normalise_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = set(cls.model_fields)
        out: dict[str, Any] = {}
        for key, value in data.items():
            name = _python_key(str(key))
            if name not in known:
                dotted = sorted(k.replace("_", ".") for k in known)
                guess = difflib.get_close_matches(str(key).replace("_", "."), dotted, n=1)
                hint = f"; did you mean '{guess[0]}'?" if guess else ""
                raise ConfigError(f"unknown config key '{key}'{hint}")
            out[name] = value
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None = None, **overrides: Any) -> Self:
        merged = {**(data or {}), **overrides}
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"]).replace("_", ".")
                problems.append(f"'{key}' = {err.get('input')!r}: {err['msg']}")
            raise ConfigError("invalid config: " + "; ".join(problems)) from None

    @classmethod
    def from_properties(cls, path: str | Path, **overrides: Any) -> Self:
        return cls.from_mapping(read_properties(path), **overrides)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Kafka-style .properties file (key=value lines, # and ! comments)."""
    result: dict[str, str] = {}
    text = Path(path).read_text()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{path}:{number}: expected key=value, got {raw!r}")
        result[line[:sep].strip()] = line[sep + 1 :].strip()
    return result
