"""A connector's transformation chain, built from its ``transforms``/``predicates`` settings.

    transforms=addTopic,route
    transforms.addTopic.type=org.apache.kafka.connect.transforms.InsertField$Value
    transforms.addTopic.topic.field=topic
    transforms.route.type=RegexRouter
    transforms.route.regex=(.*)
    transforms.route.replacement=copy-$1
    transforms.route.predicate=isFoo
    transforms.route.negate=false
    predicates=isFoo
    predicates.isFoo.type=TopicNameMatches
    predicates.isFoo.pattern=foo.*

A stage with a predicate runs only when ``predicate.test(record) != negate``. The first stage that
returns None drops the record. An exception from a stage propagates unchanged, tagged with
``transform_alias`` and ``transform_class`` attributes so the worker can report the failing stage
(dead-letter headers, logs).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.records import ConnectRecord
from connect.transforms.base import Predicate, Transformation
from streams.config import ConfigError


def _split_list(raw: str | None) -> list[str]:
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


def resolve_class(name: str, registry: Mapping[str, type], kind: str) -> type:
    """A class from a short/Kafka name in ``registry`` or a dotted path (``pkg.mod.Cls`` or
    ``pkg.mod:Cls``)."""
    name = name.strip()
    if name in registry:
        return registry[name]
    module_name, sep, attr = name.partition(":")
    if not sep:
        module_name, _, attr = name.rpartition(".")
    if module_name and attr:
        try:
            module = importlib.import_module(module_name)
            cls = getattr(module, attr)
        except (ImportError, AttributeError):
            pass
        else:
            if isinstance(cls, type):
                return cls
    known = sorted(k for k in registry if "." not in k)
    raise ConfigError(f"unknown {kind} class {name!r}; built-in: {', '.join(known)}, "
                      f"or a dotted Python path to a class")


def _prefixed(config: Mapping[str, Any], prefix: str, exclude: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for key, value in config.items():
        if key.startswith(prefix):
            sub = key[len(prefix):]
            if sub not in exclude:
                out[sub] = value
    return out


def _class_name(obj: object) -> str:
    """Kafka's class name for built-ins (for DLQ headers), else the Python dotted path."""
    cls = type(obj)
    return getattr(cls, "KAFKA_NAME", "") or f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class TransformStage:
    """One configured transform with its optional predicate."""

    alias: str
    transform: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if self.predicate is not None and self.predicate.test(record) == self.negate:
            return record
        return self.transform.apply(record)


class TransformationChain:
    """Runs a connector's transforms in order; see the module docstring for the config format."""

    def __init__(self, stages: list[TransformStage] | None = None) -> None:
        self.stages = list(stages or [])
        self._predicates: list[Predicate] = []

    @classmethod
    def from_config(cls, connector_config: Mapping[str, Any]) -> TransformationChain:
        """Build and configure every transform and predicate; raise ConfigError on bad settings."""
        from connect.transforms import PREDICATES, TRANSFORMS

        config = {str(k): v for k, v in connector_config.items()}
        predicates: dict[str, Predicate] = {}
        pred_aliases = _split_list(config.get("predicates"))
        if len(set(pred_aliases)) != len(pred_aliases):
            raise ConfigError(f"duplicate alias in predicates={config.get('predicates')!r}")
        for alias in pred_aliases:
            type_name = config.get(f"predicates.{alias}.type")
            if not type_name:
                raise ConfigError(f"missing required configuration \"predicates.{alias}.type\"")
            pred_cls = resolve_class(str(type_name), PREDICATES, "predicate")
            predicate = pred_cls()
            predicate.configure(_prefixed(config, f"predicates.{alias}.", ("type",)))
            predicates[alias] = predicate

        stages: list[TransformStage] = []
        aliases = _split_list(config.get("transforms"))
        if len(set(aliases)) != len(aliases):
            raise ConfigError(f"duplicate alias in transforms={config.get('transforms')!r}")
        for alias in aliases:
            prefix = f"transforms.{alias}."
            type_name = config.get(prefix + "type")
            if not type_name:
                raise ConfigError(f"missing required configuration \"{prefix}type\"")
            tr_cls = resolve_class(str(type_name), TRANSFORMS, "transformation")
            pred_alias = config.get(prefix + "predicate")
            negate_raw = config.get(prefix + "negate")
            predicate = None
            if pred_alias:
                if pred_alias not in predicates:
                    raise ConfigError(
                        f"{prefix}predicate={pred_alias!r} is not listed in predicates="
                        f"{config.get('predicates', '')!r}")
                predicate = predicates[pred_alias]
            elif negate_raw is not None and str(negate_raw).strip():
                raise ConfigError(f"{prefix}negate is set but {prefix}predicate is not")
            negate = False
            if negate_raw is not None and str(negate_raw).strip():
                text = str(negate_raw).strip().lower()
                if text not in ("true", "false"):
                    raise ConfigError(f"invalid value {negate_raw!r} for configuration "
                                      f"{prefix}negate: expected true or false")
                negate = text == "true"
            transform = tr_cls()
            transform.configure(_prefixed(config, prefix, ("type", "predicate", "negate")))
            stages.append(TransformStage(alias, transform, predicate, negate))
        chain = cls(stages)
        chain._predicates = list(predicates.values())
        return chain

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Run every stage in order; None as soon as one drops the record."""
        for stage in self.stages:
            try:
                result = stage.apply(record)
            except Exception as exc:
                try:
                    exc.transform_alias = stage.alias  # type: ignore[attr-defined]
                    exc.transform_class = _class_name(stage.transform)  # type: ignore[attr-defined]
                except AttributeError:
                    pass
                raise
            if result is None:
                return None
            record = result
        return record

    def close(self) -> None:
        for stage in self.stages:
            stage.transform.close()
        for predicate in self._predicates:
            close = getattr(predicate, "close", None)
            if close is not None:
                close()

    def __len__(self) -> int:
        return len(self.stages)

    def __bool__(self) -> bool:
        return True
