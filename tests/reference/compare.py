"""Run one scripted session on both brokers and compare the normalised answers field by field.

A scenario is a function of a ``Side`` (one broker: its address and a raw connection) returning
plain data. What must differ between two brokers (cluster id, addresses, generated ids, clocks,
throttling, human-readable messages) is masked by ``normalise``; every other field must be equal.
Deliberate differences are masked explicitly where a test meets them, pointing to
docs/kafka-differences.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .wire import Connection, kio_max_version

ZERO_UUID = "00000000-0000-0000-0000-000000000000"

# Field name -> what replaces its value. Masked: values that differ between any two clusters.
MASKED: dict[str, str] = {
    "cluster_id": "<cluster-id>",
    "host": "<host>",
    "port": "<port>",
    "topic_id": "<topic-id>",
    "member_id": "<member-id>",
    "leader": "<member-id>",  # JoinGroup: the leader's member id
    "producer_id": "<producer-id>",
    "log_append_time": "<time>",
}
# Dropped: throttling is a quota decision and messages are prose (docs/kafka-differences.md).
DROPPED = frozenset({"throttle_time", "error_message"})


def normalise(value: Any, drop: frozenset[str] = DROPPED,
              masked: dict[str, str] | None = None) -> Any:
    """``value`` with masked fields replaced and dropped fields removed, recursively.

    A masked field keeps Kafka's "none" values (-1, "", null, the zero uuid) visible, since
    whether an id is set at all is part of the answer.
    """
    masked = MASKED if masked is None else masked
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in drop:
                continue
            if key in masked and item not in (None, -1, "", ZERO_UUID):
                out[key] = masked[key]
            else:
                out[key] = normalise(item, drop, masked)
        return out
    if isinstance(value, list):
        return [normalise(v, drop, masked) for v in value]
    return value


def differences(ours: Any, kafka: Any, path: str = "") -> Iterator[str]:
    """Every path where the two values differ, with both values."""
    if isinstance(ours, dict) and isinstance(kafka, dict):
        for key in list(ours) + [k for k in kafka if k not in ours]:
            where = f"{path}.{key}" if path else str(key)
            if key not in kafka:
                yield f"{where}: ours={ours[key]!r}, kafka has no such field"
            elif key not in ours:
                yield f"{where}: kafka={kafka[key]!r}, ours has no such field"
            else:
                yield from differences(ours[key], kafka[key], where)
    elif _named(ours) and _named(kafka):
        # Named entries (topics, configs): compared by name, their order is not compared.
        a, b = {e["name"]: e for e in ours}, {e["name"]: e for e in kafka}
        if a.keys() - b.keys():
            yield f"{path}: only ours has {sorted(a.keys() - b.keys())}"
        if b.keys() - a.keys():
            yield f"{path}: only kafka has {sorted(b.keys() - a.keys())}"
        for name in sorted(a.keys() & b.keys()):
            yield from differences(a[name], b[name], f"{path}[{name}]")
    elif isinstance(ours, list) and isinstance(kafka, list) and len(ours) == len(kafka):
        for index, (a, b) in enumerate(zip(ours, kafka, strict=True)):
            yield from differences(a, b, f"{path}[{index}]")
    elif ours != kafka:
        yield f"{path or '<root>'}: ours={ours!r} kafka={kafka!r}"


def _named(items: Any) -> bool:
    return (isinstance(items, list) and bool(items) and all(isinstance(e, dict) and "name" in e for e in items)
            and len({e["name"] for e in items}) == len(items))


def assert_same(ours: Any, kafka: Any) -> None:
    found = list(differences(ours, kafka))
    if found:
        raise AssertionError("our broker and Apache Kafka differ:\n  " + "\n  ".join(found))


def common_versions(ours: dict[int, tuple[int, int]],
                    kafka: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Per API both brokers and kio implement: the highest version all three share."""
    out = {}
    for key in ours.keys() & kafka.keys():
        high = min(ours[key][1], kafka[key][1], kio_max_version(key))
        if high >= max(ours[key][0], kafka[key][0]):
            out[key] = high
    return out


@dataclass
class Side:
    """One broker in a comparison: its name, address, and a raw connection made on demand."""

    name: str
    bootstrap: str
    versions: dict[int, int]
    _conn: Connection | None = field(default=None, repr=False)

    def call(self, api_key: int, body: dict[str, Any], version: int | None = None) -> Any:
        """One request at the common version (or ``version``); the decoded plain answer."""
        if self._conn is None:
            self._conn = Connection(self.bootstrap)
        try:
            return self._conn.send(api_key, self.versions[api_key] if version is None
                                   else version, body)
        except (OSError, ConnectionError):
            self.close()
            raise

    def fresh(self) -> Connection:
        """A new connection of its own (closed by the caller)."""
        return Connection(self.bootstrap)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def poll(self, api_key: int, body: dict[str, Any], done: Callable[[Any], bool],
             timeout: float = 30.0, version: int | None = None) -> Any:
        """Repeat a request until ``done(answer)``: Kafka settles some things asynchronously."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.call(api_key, body, version)
            if done(answer):
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no settled answer in {timeout}s: {answer}")
            time.sleep(0.1)


@dataclass
class Pair:
    ours: Side
    kafka: Side

    def run(self, scenario: Callable[[Side], Any]) -> tuple[Any, Any]:
        """The scenario's normalised result on each broker."""
        return normalise(scenario(self.ours)), normalise(scenario(self.kafka))

    def check(self, scenario: Callable[[Side], Any]) -> Any:
        """Run on both, assert equal, return our (normalised) result for further asserts."""
        ours, kafka = self.run(scenario)
        assert_same(ours, kafka)
        return ours

    def close(self) -> None:
        self.ours.close()
        self.kafka.close()
