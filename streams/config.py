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
    # hide_input_in_errors: a raw ValidationError must not print a password it rejected.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)

    @classmethod
    def accepts_client_key(cls, key: str) -> bool:
        """Models taking Kafka client properties (``security.protocol``, ``ssl.*``,
        ``consumer.*`` ...) say yes here and collect them in a ``client_configs`` field
        (see streams/kafka/client_config.py)."""
        return False

    @classmethod
    def client_key_names(cls) -> frozenset[str]:
        """Unprefixed client keys, for "did you mean" hints."""
        return frozenset()

    @model_validator(mode="before")
    @classmethod
    def _normalise_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = set(cls.model_fields)
        out: dict[str, Any] = {}
        client: dict[str, Any] = {}
        for key, value in data.items():
            name = _python_key(str(key))
            client_key = str(key).strip() if "." in str(key) else name.replace("_", ".")
            if name not in known and cls.accepts_client_key(client_key):
                client[client_key] = value
                continue
            if name not in known:
                dotted = sorted({k.replace("_", ".") for k in known} | cls.client_key_names())
                guess = difflib.get_close_matches(str(key).replace("_", "."), dotted, n=1)
                hint = f"; did you mean '{guess[0]}'?" if guess else ""
                raise ConfigError(f"unknown config key '{key}'{hint}")
            out[name] = value
        if client:
            given = out.get("client_configs") or {}
            if not isinstance(given, Mapping):  # an already checked ClientConfigs
                given = given.items()
            out["client_configs"] = {**given, **client}
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
                field = cls.model_fields.get(str(err["loc"][0])) if err["loc"] else None
                if key in ("", "client.configs"):  # the message names the key itself
                    problems.append(err["msg"].removeprefix("Value error, "))
                elif field is not None and ("Secret" in repr(field.annotation)
                                            or "Password" in repr(field.annotation)):
                    problems.append(f"'{key}': {err['msg']}")  # never the secret value
                else:
                    problems.append(f"'{key}' = {err.get('input')!r}: {err['msg']}")
            raise ConfigError("invalid config: " + "; ".join(problems)) from None

    @classmethod
    def from_properties(cls, path: str | Path, **overrides: Any) -> Self:
        return cls.from_mapping(read_properties(path), **overrides)


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Kafka-style .properties file (key=value lines, # and ! comments, and a line that
    ends in a backslash continued on the next, as java.util.Properties reads it: JAAS values in
    server.properties are usually written that way)."""
    result: dict[str, str] = {}
    lines = Path(path).read_text().splitlines()
    index = 0
    while index < len(lines):
        number, raw = index + 1, lines[index]
        index += 1
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and index < len(lines):
            line = line[:-1] + lines[index].strip()
            index += 1
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{path}:{number}: expected key=value, got {raw!r}")
        result[line[:sep].strip()] = line[sep + 1 :].strip()
    return result
