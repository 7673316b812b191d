"""Pieces both task runners need: converters for a connector."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from connect import plugins
from connect.runtime.config import WorkerConfig


def _prefixed(config: dict[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


@dataclass
class Converters:
    key: Any
    value: Any
    header: Any


def _configure(instance: Any, configs: dict[str, str], is_key: bool | None) -> Any:
    params = inspect.signature(instance.configure).parameters
    if is_key is not None and len(params) >= 2:
        instance.configure(configs, is_key)
    elif len(params) >= 2:
        instance.configure(configs, False)
    else:
        instance.configure(configs)
    return instance


def build_converters(worker: WorkerConfig, connector: dict[str, str]) -> Converters:
    """Connector-level ``key.converter`` etc. override the worker's, with their own sub-keys."""
    made = []
    for role, is_key in (("key", True), ("value", False), ("header", None)):
        name_key = f"{role}.converter"
        if connector.get(name_key):
            name, configs = connector[name_key], _prefixed(connector, name_key + ".")
        else:
            name, configs = getattr(worker, f"{role}_converter"), worker.prefixed(name_key + ".")
        made.append(_configure(plugins.converter_class(name)(), configs, is_key))
    return Converters(*made)
