"""Find plugins by the names users write in configs.

``connector.class`` (and converter/transform/predicate types) accept a short alias
(``FileStreamSource``), Kafka's class name (``org.apache.kafka.connect.file.FileStreamSourceConnector``),
a dotted Python path (``mypkg.connectors.MySink`` or ``mypkg.connectors:MySink``), or the name of an
entry point in the ``streams.connect.plugins`` group, so other packages can ship plugins without
being imported by us.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from connect.api import Connector, SinkConnector, SourceConnector
from connect.config_def import ConfigException

ENTRY_POINT_GROUP = "streams.connect.plugins"

# Built-in connectors: alias -> "module:Class". Kafka's class names are aliases too.
_CONNECTORS: dict[str, str] = {
    "FileStreamSource": "connect.file.source:FileStreamSourceConnector",
    "FileStreamSourceConnector": "connect.file.source:FileStreamSourceConnector",
    "org.apache.kafka.connect.file.FileStreamSourceConnector":
        "connect.file.source:FileStreamSourceConnector",
    "FileStreamSink": "connect.file.sink:FileStreamSinkConnector",
    "FileStreamSinkConnector": "connect.file.sink:FileStreamSinkConnector",
    "org.apache.kafka.connect.file.FileStreamSinkConnector":
        "connect.file.sink:FileStreamSinkConnector",
    "DataGen": "connect.datagen:DataGenConnector",
    "DataGenConnector": "connect.datagen:DataGenConnector",
    # The Spark sink lives in its own module (next issue); the alias is reserved for it.
    "SparkSink": "connect.spark:SparkSinkConnector",
    "SparkSinkConnector": "connect.spark:SparkSinkConnector",
}
# MirrorMaker 2: Kafka's class names and its plugin aliases (simple name, without "Connector").
for _kind in ("Source", "Checkpoint", "Heartbeat"):
    _target = f"connect.mirror.{_kind.lower()}:Mirror{_kind}Connector"
    _CONNECTORS[f"Mirror{_kind}"] = _target
    _CONNECTORS[f"Mirror{_kind}Connector"] = _target
    _CONNECTORS[f"org.apache.kafka.connect.mirror.Mirror{_kind}Connector"] = _target

# The name shown by GET /connector-plugins for a built-in class (Kafka's where one exists).
_DISPLAY_NAMES = {
    "connect.file.source:FileStreamSourceConnector":
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "connect.file.sink:FileStreamSinkConnector":
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
    "connect.spark.sink:SparkSinkConnector": "connect.spark.SparkSinkConnector",
    **{f"connect.mirror.{kind.lower()}:Mirror{kind}Connector":
       f"org.apache.kafka.connect.mirror.Mirror{kind}Connector"
       for kind in ("Source", "Checkpoint", "Heartbeat")},
}


class PluginNotFoundError(ConfigException):
    """No plugin has this name; the message suggests the closest known one."""


@dataclass(frozen=True)
class PluginDesc:
    class_name: str
    type: str  # source | sink | converter | header_converter | transformation | predicate
    version: str
    cls: type

    def to_json(self) -> dict[str, str]:
        return {"class": self.class_name, "type": self.type, "version": self.version}


def _import(target: str) -> Any:
    module_name, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _missing(kind: str, name: str, known: list[str]) -> PluginNotFoundError:
    guess = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{guess[0]}'?" if guess else ""
    return PluginNotFoundError(f"Failed to find any class that implements {kind} and which name "
                               f"matches {name}{hint}")


def _resolve(name: str, kind: str, builtins: dict[str, Any], base: type | None) -> type:
    name = (name or "").strip()
    target: Any = builtins.get(name)
    if target is None:
        eps = _entry_points()
        if name in eps:
            target = eps[name].load()
        elif "." in name or ":" in name:
            try:
                target = _import(name)
            except (ImportError, AttributeError, ValueError):
                target = None
    if isinstance(target, str):
        try:
            target = _import(target)
        except ImportError as exc:
            raise PluginNotFoundError(
                f"{kind} '{name}' is known but its module is not installed: {exc}") from None
    if not isinstance(target, type) or (base is not None and not issubclass(target, base)):
        raise _missing(kind, name, [*builtins, *_entry_points()])
    return target


def connector_class(name: str) -> type[Connector]:
    """The Connector subclass for a ``connector.class`` value."""
    return _resolve(name, "Connector", _CONNECTORS, Connector)


def connector_type(cls: type[Connector]) -> str:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "unknown"


def class_name(cls: type) -> str:
    """The canonical name we report for a plugin class."""
    dotted = f"{cls.__module__}:{cls.__qualname__}"
    return _DISPLAY_NAMES.get(dotted, f"{cls.__module__}.{cls.__qualname__}")


def _converters() -> dict[str, type]:
    from connect.converters import CONVERTERS

    return CONVERTERS


def _transforms() -> dict[str, type]:
    from connect.transforms import TRANSFORMS

    return TRANSFORMS


def _predicates() -> dict[str, type]:
    from connect.transforms import PREDICATES

    return PREDICATES


def converter_class(name: str) -> type:
    return _resolve(name, "Converter", _converters(), None)


def transform_class(name: str) -> type:
    return _resolve(name, "Transformation", _transforms(), None)


def predicate_class(name: str) -> type:
    return _resolve(name, "Predicate", _predicates(), None)


def _version(cls: type) -> str:
    try:
        return str(cls().version())
    except Exception:
        from streams import __version__

        return __version__


def _preferred_names(table: dict[str, type]) -> dict[type, str]:
    """One name per class: Kafka's class name when there is one, else the longest alias."""
    best: dict[type, str] = {}
    for alias, cls in table.items():
        current = best.get(cls)
        rank = (alias.startswith("org.apache."), "." in alias, len(alias))
        if current is None or rank > (current.startswith("org.apache."), "." in current,
                                      len(current)):
            best[cls] = alias
    return best


def connector_plugins() -> list[PluginDesc]:
    """Every connector we can load: built-ins (that import) and entry points."""
    seen: dict[type, PluginDesc] = {}
    candidates: list[Any] = list(dict.fromkeys(_CONNECTORS.values()))
    for ep in _entry_points().values():
        candidates.append(ep)
    for target in candidates:
        try:
            cls = target.load() if isinstance(target, metadata.EntryPoint) else _import(target)
        except Exception:
            continue  # e.g. the Spark sink before it exists
        if isinstance(cls, type) and issubclass(cls, Connector) and cls not in seen:
            seen[cls] = PluginDesc(class_name(cls), connector_type(cls), _version(cls), cls)
    return sorted(seen.values(), key=lambda d: d.class_name)


def all_plugins() -> list[PluginDesc]:
    """Connectors plus converters, header converters, transformations and predicates."""
    result = connector_plugins()
    for kind, loader in (("converter", _converters), ("transformation", _transforms),
                         ("predicate", _predicates)):
        try:
            table = loader()
        except ImportError:
            continue
        for cls, name in sorted(_preferred_names(table).items(), key=lambda kv: kv[1]):
            plugin_type = kind
            if kind == "converter" and "Header" in name and "Converter" in name \
                    and not hasattr(cls, "from_connect_data"):
                plugin_type = "header_converter"
            result.append(PluginDesc(name, plugin_type, _version(cls), cls))
            if kind == "converter" and hasattr(cls, "from_connect_header") \
                    and hasattr(cls, "from_connect_data"):
                result.append(PluginDesc(name, "header_converter", _version(cls), cls))
    return result


def find_plugin(name: str) -> PluginDesc:
    """A plugin by any accepted name (for ``/connector-plugins/{plugin}/...``)."""
    cls = connector_class(name)
    return PluginDesc(class_name(cls), connector_type(cls), _version(cls), cls)


__all__ = [
    "ENTRY_POINT_GROUP", "PluginDesc", "PluginNotFoundError", "all_plugins", "class_name",
    "connector_class", "connector_plugins", "connector_type", "converter_class", "find_plugin",
    "predicate_class", "transform_class",
]
