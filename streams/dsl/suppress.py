"""``Suppressed`` and ``BufferConfig``: hold back KTable updates (reference §1.7).

``Suppressed.until_window_closes()`` emits one final result per window once
``ST >= window end + grace`` (sessions: end + gap + grace), the grace being the one of the
upstream windowed aggregation. ``Suppressed.until_time_limit(ms)`` emits the latest value of a
key once its record timestamp is ``<= ST - limit``. ``suppress_table`` builds the node and its
buffer store (named as Kafka's ``KTableImpl.suppress`` names it:
``KTABLE-SUPPRESS-STATE-STORE-<n>``, or ``<name>-store`` for a named suppression), changelogged
unless the buffer config disables logging; ``KTable.suppress`` calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..processor.suppress import SuppressProcessor
from ..state.stores import StoreBuilder
from .materialized import Duration, to_ms

if TYPE_CHECKING:
    from .ktable import KTable

_SUPPRESS = "KTABLE-SUPPRESS"
_STORE_PREFIX = "KTABLE-SUPPRESS-STATE-STORE"


@dataclass(frozen=True)
class BufferConfig:
    """How much a suppression buffer may hold, and what happens when it is full.

    ``unbounded()`` and ``shut_down_when_full()`` are *strict* (never emit early);
    ``emit_early_when_full()`` evicts the oldest entries early instead. The buffer is
    changelogged (so it survives restarts) unless ``with_logging_disabled()``.
    """

    records_limit: int | None = None
    bytes_limit: int | None = None
    strict: bool = True
    logging: bool = True
    changelog_config: tuple[tuple[str, str], ...] = ()

    @classmethod
    def unbounded(cls) -> BufferConfig:
        return cls()

    @classmethod
    def max_records(cls, n: int) -> BufferConfig:
        """At most n records; emits early when full unless ``shut_down_when_full()``."""
        return cls().with_max_records(n)

    @classmethod
    def max_bytes(cls, n: int) -> BufferConfig:
        """At most n bytes (serialized key + value); see ``max_records``."""
        return cls().with_max_bytes(n)

    def with_max_records(self, n: int) -> BufferConfig:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"BufferConfig max records must be a positive int, got {n!r}")
        return replace(self, records_limit=n, strict=False)

    def with_max_bytes(self, n: int) -> BufferConfig:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"BufferConfig max bytes must be a positive int, got {n!r}")
        return replace(self, bytes_limit=n, strict=False)

    def shut_down_when_full(self) -> BufferConfig:
        return replace(self, strict=True)

    def emit_early_when_full(self) -> BufferConfig:
        return replace(self, strict=False)

    def with_logging_disabled(self) -> BufferConfig:
        """No changelog: the buffer is lost on restart (Kafka's ``withLoggingDisabled``)."""
        return replace(self, logging=False, changelog_config=())

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> BufferConfig:
        """Changelog with extra topic configs (Kafka's ``withLoggingEnabled``)."""
        return replace(self, logging=True, changelog_config=tuple(sorted((config or {}).items())))


@dataclass(frozen=True)
class Suppressed:
    until_window_close: bool
    time_limit_ms: int
    buffer_config: BufferConfig
    name: str | None = None

    @classmethod
    def until_window_closes(cls, buffer_config: BufferConfig | None = None) -> Suppressed:
        config = buffer_config or BufferConfig.unbounded()
        if not config.strict:
            raise ValueError("Suppressed.until_window_closes needs a strict buffer: "
                             "BufferConfig.unbounded() or a bounded config with "
                             ".shut_down_when_full()")
        return cls(True, 0, config)

    @classmethod
    def until_time_limit(cls, time_to_wait_for_more_events: Duration,
                         buffer_config: BufferConfig | None = None) -> Suppressed:
        limit = to_ms(time_to_wait_for_more_events)
        assert limit is not None
        if limit < 0:
            raise ValueError(f"Suppressed.until_time_limit needs a limit >= 0, got {limit} ms")
        return cls(False, limit, buffer_config or BufferConfig.unbounded())

    def with_name(self, name: str) -> Suppressed:
        return replace(self, name=name)


def suppress_table(ktable: KTable, suppressed: Suppressed) -> KTable:
    """Add a suppression node after ``ktable``; the result is not queryable."""
    from .ktable import KTable
    from .windowed import window_close_delay

    if not isinstance(suppressed, Suppressed):
        raise TypeError("suppress takes Suppressed.until_window_closes(...) or "
                        f"Suppressed.until_time_limit(...), got {suppressed!r}")
    builder = ktable.builder
    # the buffer forwards the old values it is given: Kafka's suppress asks its parent for
    # them (enableSendingOldValues(true), materializing it if need be)
    ktable.enable_sending_old_values()
    if suppressed.name is not None:
        name, store_name = suppressed.name, f"{suppressed.name}-store"
    else:
        name = builder.new_name(_SUPPRESS)
        store_name = f"{_STORE_PREFIX}-{builder.next_index():010d}"
    if suppressed.until_window_close:
        delay = window_close_delay(builder.topology, ktable.node)
        window_end = True
    else:
        delay, window_end = suppressed.time_limit_ms, False
    config = suppressed.buffer_config
    key_serde, value_serde = ktable.key_serde, ktable.value_serde
    store = StoreBuilder(store_name, "suppress", key_serde, value_serde, "memory",
                         logging=config.logging, changelog_config=dict(config.changelog_config))
    builder.topology.add_processor(
        name,
        lambda: SuppressProcessor(name, store_name, delay, window_end, config.records_limit,
                                  config.bytes_limit, config.strict),
        ktable.node)
    builder.topology.add_state_store(store, name)
    result = KTable(builder, name, None, key_serde, value_serde)
    result.getter_recipe = ("suppress", ktable, store_name)  # how joins read it
    return result
