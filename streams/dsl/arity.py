"""Check user functions' parameter counts when the topology is defined.

A lambda with the wrong number of parameters would otherwise fail on the first record, deep
inside a running task. ``check`` raises at the DSL call instead, naming the operator and the
signature it calls the function with. Callables whose signature Python cannot read (some
builtins) are accepted as they are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


class ArityError(TypeError):
    """A function given to a DSL operator takes the wrong number of parameters."""


def accepts(fn: Callable[..., Any], count: int) -> bool | None:
    """Whether ``fn`` can be called with ``count`` positional arguments (None: unknown)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def check(fn: Any, operator: str, call: str) -> None:
    """``call`` is how the operator calls ``fn``, e.g. ``"predicate(key, value)"``."""
    if fn is None:
        return
    if not callable(fn):
        raise ArityError(f"{operator}: expected a function {call}, got {fn!r}")
    inner = call[call.index("(") + 1: call.rindex(")")]
    count = len([p for p in inner.split(",") if p.strip()])
    if accepts(fn, count) is False:
        try:
            shown = f"{getattr(fn, '__name__', type(fn).__name__)}{inspect.signature(fn)}"
        except (TypeError, ValueError):
            shown = repr(fn)
        raise ArityError(f"{operator}: the function must take {count} parameter(s), called as "
                         f"{call}; got {shown}")


def _count(call: str) -> int:
    inner = call[call.index("(") + 1: call.rindex(")")]
    return len([p for p in inner.split(",") if p.strip()])


def takes_key(fn: Any, operator: str, plain: str, keyed: str) -> bool:
    """Whether ``fn`` is the key-aware form of a function Kafka offers in both (ValueMapper /
    ValueMapperWithKey, ValueJoiner / ValueJoinerWithKey, ...), decided by how many
    parameters it takes; the plain form wins when both fit. ``plain`` and ``keyed`` are the
    two calls, e.g. ``"mapper(value)"`` and ``"mapper(key, value)"``; when neither fits the
    error names both."""
    if not callable(fn):
        raise ArityError(f"{operator}: expected a function {plain} or {keyed}, got {fn!r}")
    if accepts(fn, _count(plain)) is not False:
        return False
    if accepts(fn, _count(keyed)):
        return True
    try:
        shown = f"{getattr(fn, '__name__', type(fn).__name__)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        shown = repr(fn)
    raise ArityError(f"{operator}: the function must be called as {plain} or as {keyed}; "
                     f"got {shown}")


def keyed_joiner(joiner: Any, operator: str) -> Callable[[Any, Any, Any], Any]:
    """A stream join's joiner as ``(key, left_value, right_value)`` whichever form was given
    (Kafka's ValueJoiner / ValueJoinerWithKey)."""
    if joiner is None:
        raise TypeError(f"{operator}: a join needs a joiner(left_value, right_value) or "
                        "joiner(key, left_value, right_value)")
    if takes_key(joiner, operator, "joiner(left_value, right_value)",
                 "joiner(key, left_value, right_value)"):
        return joiner  # type: ignore[no-any-return]
    return lambda key, left, right: joiner(left, right)
