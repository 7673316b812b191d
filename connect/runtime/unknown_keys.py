"""Connector config keys nobody reads: a typo (``fiel=`` for ``file=``) must not pass in silence.

Kafka's AbstractConfig logs "The configuration '...' was supplied but isn't a known config." for
such keys; this says the same and names the nearest known key.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

# Keys under these prefixes belong to transforms, predicates, converters, client overrides and
# config providers, which check them themselves.
OPEN_PREFIXES = ("transforms.", "predicates.", "key.converter.", "value.converter.",
                 "header.converter.", "producer.override.", "consumer.override.",
                 "admin.override.", "config.providers.", "config.action.")


def unknown_keys(config: Mapping[str, object], known: Iterable[str]) -> list[tuple[str, str | None]]:
    """(key, nearest known key or None) for every key of ``config`` that nothing defines."""
    names = set(known)
    found = []
    for key in sorted(config):
        if key in names or key.startswith(OPEN_PREFIXES):
            continue
        guess = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.6)
        found.append((key, guess[0] if guess else None))
    return found


def describe(connector: str, key: str, guess: str | None) -> str:
    hint = f"; did you mean '{guess}'?" if guess else ""
    return (f"connector {connector!r}: the configuration {key!r} was supplied but isn't a known "
            f"config{hint}")
