"""Secrets in Connect configs: config providers (KIP-297, KIP-421, KIP-887) and masking.

A worker declares providers the way Kafka Connect does::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider

and a connector config then says ``"connection.password": "${file:/etc/secrets/db.properties:pw}"``
or ``"${env:DB_PASSWORD}"``. The config topic and the REST API keep the reference; the connector
and its tasks get the value, resolved when they start (Kafka's WorkerConfigTransformer). A
reference whose provider or key is unknown stays as written, as Kafka's ConfigTransformer does.

``mask_connector_config`` hides what is still secret in a config the REST API returns:
password-type keys (the connector's ConfigDef PASSWORD keys and Kafka's client password keys,
``producer.override.sasl.jaas.config`` included) read ``[hidden]``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.config_def import ConfigException
from streams.config import ConfigError, read_properties
from streams.kafka.client_config import HIDDEN, is_password_key

# ${provider:[path:]key}, Kafka's ConfigTransformer.DEFAULT_PATTERN
VARIABLE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")

_KAFKA = "org.apache.kafka.common.config.provider."


class FileConfigProvider:
    """``${file:/path/to/file.properties:key}``: a key of a properties file."""

    def __init__(self, params: Mapping[str, str]) -> None:
        self.allowed = _allowed_paths(params)

    def get(self, path: str | None, key: str) -> str | None:
        if not path:
            return None
        file = _check_path(Path(path), self.allowed)
        try:
            return read_properties(file).get(key)
        except OSError as exc:
            raise ConfigException(f"config provider 'file': cannot read {path}: "
                                  f"{exc.strerror}") from None
        except ConfigError as exc:
            raise ConfigException(f"config provider 'file': {exc}") from None


class DirectoryConfigProvider:
    """``${dir:/path/to/dir:name}``: the content of one file of a directory (KIP-632)."""

    def __init__(self, params: Mapping[str, str]) -> None:
        self.allowed = _allowed_paths(params)

    def get(self, path: str | None, key: str) -> str | None:
        if not path:
            return None
        file = _check_path(Path(path), self.allowed) / key
        if "/" in key or not file.is_file():
            return None
        return file.read_text()


class EnvVarConfigProvider:
    """``${env:VAR}``: an environment variable, optionally limited by ``allowlist.pattern``."""

    def __init__(self, params: Mapping[str, str]) -> None:
        pattern = params.get("allowlist.pattern")
        self.allow = re.compile(pattern) if pattern else None

    def get(self, path: str | None, key: str) -> str | None:
        if path:  # Kafka: the env provider takes no path
            return None
        if self.allow is not None and not self.allow.fullmatch(key):
            return None
        return os.environ.get(key)


PROVIDER_CLASSES: dict[str, type] = {
    _KAFKA + "FileConfigProvider": FileConfigProvider,
    _KAFKA + "DirectoryConfigProvider": DirectoryConfigProvider,
    _KAFKA + "EnvVarConfigProvider": EnvVarConfigProvider,
    "FileConfigProvider": FileConfigProvider,
    "DirectoryConfigProvider": DirectoryConfigProvider,
    "EnvVarConfigProvider": EnvVarConfigProvider,
}


def _allowed_paths(params: Mapping[str, str]) -> list[Path] | None:
    """KIP-993 ``allowed.paths``: the only directories a provider may read from."""
    raw = params.get("allowed.paths")
    if not raw:
        return None
    return [Path(p.strip()).resolve() for p in raw.split(",") if p.strip()]


def _check_path(path: Path, allowed: list[Path] | None) -> Path:
    if allowed is None:
        return path
    real = path.resolve()
    if not any(real == a or a in real.parents for a in allowed):
        raise ConfigException(f"config provider: {path} is not under allowed.paths")
    return path


class ConfigProviders:
    """The providers a worker declared; ``resolve`` replaces ``${provider:path:key}``."""

    def __init__(self, providers: Mapping[str, Any]) -> None:
        self.providers = dict(providers)

    @classmethod
    def from_worker(cls, names: str | None, settings: Mapping[str, str]) -> ConfigProviders:
        """``names`` is ``config.providers``; ``settings`` the ``config.providers.*`` keys
        with that prefix removed (``file.class``, ``env.param.allowlist.pattern``)."""
        providers: dict[str, Any] = {}
        for name in [n.strip() for n in (names or "").split(",") if n.strip()]:
            class_name = settings.get(f"{name}.class")
            if not class_name:
                raise ConfigError(f"config.providers lists '{name}' but "
                                  f"'config.providers.{name}.class' is not set")
            provider_cls = PROVIDER_CLASSES.get(class_name.strip())
            if provider_cls is None:
                known = ", ".join(k for k in PROVIDER_CLASSES if k.startswith(_KAFKA))
                raise ConfigError(f"'config.providers.{name}.class': unknown provider "
                                  f"{class_name!r}; known: {known}")
            prefix = f"{name}.param."
            params = {k[len(prefix):]: v for k, v in settings.items() if k.startswith(prefix)}
            providers[name] = provider_cls(params)
        unknown = sorted({k.split(".", 1)[0] for k in settings} - set(providers))
        if unknown:
            raise ConfigError(f"'config.providers.{unknown[0]}.*' is set but "
                              f"'{unknown[0]}' is not listed in config.providers")
        return cls(providers)

    def __bool__(self) -> bool:
        return bool(self.providers)

    def resolve_value(self, value: str) -> str:
        def replace(match: re.Match[str]) -> str:
            provider = self.providers.get(match.group(1))
            if provider is None:
                return match.group(0)
            found = provider.get(match.group(2), match.group(3))
            return match.group(0) if found is None else found

        return VARIABLE.sub(replace, value) if "${" in value else value

    def resolve(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``config`` with every variable of a known provider replaced."""
        if not self.providers:
            return dict(config)
        return {k: self.resolve_value(v) if isinstance(v, str) else v for k, v in config.items()}


def password_keys(config: Mapping[str, Any]) -> set[str]:
    """The connector's own PASSWORD-type keys (from its ConfigDef), if its class loads."""
    try:
        from connect import plugins
        from connect.config_def import ConfigType

        cls = plugins.connector_class(str(config.get("connector.class", "")))
        definition = cls().config_def()
        return {k.name for k in definition.config_keys().values()
                if k.type in (ConfigType.PASSWORD, "PASSWORD")}
    except Exception:  # an unloadable class has no ConfigDef to ask; heuristics still apply
        return set()


def mask_connector_config(config: Mapping[str, Any],
                          extra: set[str] | None = None) -> dict[str, Any]:
    """``config`` with password-type values shown as ``[hidden]``; a provider reference
    (``${file:...}``) is not the secret and stays visible."""
    secret = password_keys(config) | (extra or set())
    out: dict[str, Any] = {}
    for key, value in config.items():
        hide = key in secret or is_password_key(key)
        reference = isinstance(value, str) and VARIABLE.fullmatch(value.strip()) is not None
        out[key] = HIDDEN if hide and value is not None and not reference else value
    return out
