"""``Branched``: how a ``split()`` branch is named and what is done with it (Kafka's).

``Branched.as_(name)`` names it; ``Branched.with_function(fn, name=None)`` hands the branch
stream to ``fn`` at once and puts what ``fn`` returns in the result dict (nothing when it
returns None); ``Branched.with_consumer(fn, name=None)`` hands it over and puts nothing in the
dict. The dict key is the split's name (or generated prefix) plus the branch name or its
1-based index (``0`` for the default branch), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Branched:
    name: str | None = None
    function: Callable[[Any], Any] | None = None
    consumer: Callable[[Any], Any] | None = None

    @staticmethod
    def as_(name: str) -> Branched:
        return Branched(name=name)

    @staticmethod
    def with_function(function: Callable[[Any], Any], name: str | None = None) -> Branched:
        if not callable(function):
            raise TypeError(f"Branched.with_function takes a function(stream), got {function!r}")
        return Branched(name=name, function=function)

    @staticmethod
    def with_consumer(consumer: Callable[[Any], Any], name: str | None = None) -> Branched:
        if not callable(consumer):
            raise TypeError(f"Branched.with_consumer takes a function(stream), got {consumer!r}")
        return Branched(name=name, consumer=consumer)

    @staticmethod
    def of(value: Branched | str | None) -> Branched:
        """A branch name is accepted wherever a Branched is."""
        if value is None:
            return Branched()
        if isinstance(value, str):
            return Branched(name=value)
        if isinstance(value, Branched):
            return value
        raise TypeError(f"expected Branched or a branch name, got {value!r}")
