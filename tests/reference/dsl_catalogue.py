"""The named functions DSL cases may use, identical to TopologyRunner.java's catalogue.

Cases name their predicates, mappers, aggregators and joiners instead of carrying code, so the
same JSON builds a topology on both DSLs. Values are ``str`` ("s") or ``int`` ("l", Kafka's
Long); ``s()`` renders a value as Java's ``String.valueOf`` does, ``None`` as ``"null"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def s(value: Any) -> str:
    return "null" if value is None else str(value)


def first_char(value: Any) -> str | None:
    return None if value is None else s(value)[:1]


PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "value-has-a": lambda k, v: v is not None and "a" in s(v),
    "value-len-odd": lambda k, v: v is not None and len(s(v)) % 2 == 1,
    "key-lt-c": lambda k, v: k is not None and s(k) < "c",
    "value-not-null": lambda k, v: v is not None,
}

# name -> (function, input type or None for any, output type or None for "same as input")
VALUE_MAPPERS: dict[str, tuple[Callable[[Any], Any], str | None, str | None]] = {
    "upper": (lambda v: s(v).upper(), None, "s"),
    "append-x": (lambda v: s(v) + "x", None, "s"),
    "len": (lambda v: len(s(v)), None, "l"),
    "double": (lambda v: v * 2, "l", "l"),
}

KEY_MAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "value-as-key": lambda k, v: None if v is None else s(v),
    "first-char": lambda k, v: first_char(v),
    "key-upper": lambda k, v: None if k is None else s(k).upper(),
}

# name -> (function, output type or None for "same")
FLAT_MAPPERS: dict[str, tuple[Callable[[Any], list[Any]], str | None]] = {
    "split-chars": (lambda v: [] if v is None else list(s(v)), "s"),
    "dup": (lambda v: [v, v], None),
    "none": (lambda v: [], None),
}

# KTable.group_by: name -> ((key, value) -> (new key, new value), output type or None)
REGROUPERS: dict[str, tuple[Callable[[Any, Any], tuple[Any, Any]], str | None]] = {
    "by-first-char": (lambda k, v: (first_char(v), v), None),
    "swap": (lambda k, v: (s(v), s(k)), "s"),
}

# reduce: name -> (adder(agg, v), subtractor(agg, v) or None, input type or None)
REDUCERS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any] | None,
                          str | None]] = {
    "concat": (lambda a, v: s(a) + "+" + s(v), lambda a, v: s(a) + "-" + s(v), "s"),
    "sum": (lambda a, v: a + v, lambda a, v: a - v, "l"),
    "latest": (lambda a, v: v, None, None),
}


def aggregate(name: str, value: Any, agg: Any, sign: int) -> Any:
    """One aggregator step; ``sign`` -1 is the KGroupedTable subtractor."""
    if name == "count":
        return agg + sign
    if name == "sum-len":
        return agg + sign * len(s(value))
    if name == "sum":
        return agg + sign * value
    if name == "concat":
        return s(agg) + ("+" if sign > 0 else "-") + s(value)
    raise ValueError(f"aggregator {name}")


# aggregate: name -> (input type or None, output type)
AGGREGATORS: dict[str, tuple[str | None, str]] = {
    "count": (None, "l"), "sum-len": (None, "l"), "sum": ("l", "l"), "concat": (None, "s"),
}


def initial(name: str) -> Any:
    return "" if name == "concat" else 0


def merge(name: str, a: Any, b: Any) -> Any:
    """Session merger(key, agg1, agg2)."""
    return s(a) + "&" + s(b) if name == "concat" else a + b


JOINERS: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda left, right: s(left) + "|" + s(right),
}


def windowed_key(windowed: Any) -> str:
    """A windowed key as one string, the same on both sides: ``key@start/end``."""
    return f"{s(windowed.key)}@{windowed.window.start}/{windowed.window.end}"
