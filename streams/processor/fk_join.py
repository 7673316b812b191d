"""Foreign-key table join processors (Kafka's ``foreignkeyjoin`` package, reference §2.4).

The left table sends a *subscription* (its key, a hash of its value and an instruction) keyed
by the foreign key through ``<app>-<name>-subscription-registration-topic``, so that it lands
on the partition owning that key of the right table. There a subscription store (key
``[fk length: 4][fk][pk]``) remembers who subscribed to which foreign key; subscriptions are
answered from the right table, and every right-table update is fanned out to all subscribers.
Answers travel back through ``<app>-<name>-subscription-response-topic`` to the left key's
partition, where a response is used only if the hash still matches the left table's current
value (out-of-order answers from an older foreign key are dropped).

Keys and values cross the internal topics as bytes: the primary key in the left store's key
format, the foreign key in the right table's topic key format (so the default partitioner puts
a subscription on the right table's partition), foreign values in the right table's value
serde (or the configured default, else the internal serde).
"""

from __future__ import annotations

import enum
import hashlib
import logging
import struct
from collections.abc import Callable
from typing import Any

from ..serde import Serde, SerializationError
from .api import Change, Processor, ProcessorContext, Record
from .cached import CacheForwarding
from .joins import internal_value_serde, topic_key_serde
from .value_getter import bind_view, view_name

log = logging.getLogger(__name__)

_INT = struct.Struct(">i")
_VERSION = 0
_HASH_SIZE = 16


class Instruction(enum.IntEnum):
    DELETE_KEY_NO_PROPAGATE = 0  # unsubscribe, send nothing
    DELETE_KEY_AND_PROPAGATE = 1  # unsubscribe, send (k, null)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # send (k, fk value) or (k, null)
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # send (k, fk value) only if there is one


def value_hash(data: bytes | None) -> bytes | None:
    """128-bit digest of a serialized left value; None stays None (a deleted left row)."""
    return None if data is None else hashlib.blake2b(data, digest_size=_HASH_SIZE).digest()


class SubscriptionWrapper:
    __slots__ = ("hash", "instruction", "primary_key", "primary_partition")

    def __init__(self, hash_: bytes | None, instruction: Instruction, primary_key: bytes,
                 primary_partition: int) -> None:
        self.hash = hash_
        self.instruction = instruction
        self.primary_key = primary_key
        self.primary_partition = primary_partition

    def __repr__(self) -> str:
        return (f"SubscriptionWrapper({self.instruction.name}, pk={self.primary_key!r}, "
                f"partition={self.primary_partition})")


class SubscriptionResponseWrapper:
    __slots__ = ("hash", "foreign_value", "primary_partition")

    def __init__(self, hash_: bytes | None, foreign_value: bytes | None,
                 primary_partition: int) -> None:
        self.hash = hash_
        self.foreign_value = foreign_value
        self.primary_partition = primary_partition


class SubscriptionWrapperSerde(Serde[SubscriptionWrapper]):
    """``[version][instruction][has hash][hash: 16?][partition: 4][primary key bytes]``."""

    name = "fk_subscription"

    def to_bytes(self, value: SubscriptionWrapper) -> bytes:
        head = bytes((_VERSION, int(value.instruction), 0 if value.hash is None else 1))
        return (head + (value.hash or b"") + _INT.pack(value.primary_partition)
                + value.primary_key)

    def from_bytes(self, data: bytes) -> SubscriptionWrapper:
        data = bytes(data)
        if data[0] != _VERSION:
            raise SerializationError(f"unknown subscription wrapper version {data[0]}")
        offset = 3
        hash_ = None
        if data[2]:
            hash_ = data[offset:offset + _HASH_SIZE]
            offset += _HASH_SIZE
        partition = _INT.unpack_from(data, offset)[0]
        return SubscriptionWrapper(hash_, Instruction(data[1]), data[offset + 4:], partition)


class SubscriptionResponseWrapperSerde(Serde[SubscriptionResponseWrapper]):
    """``[version][flags: hash, value][hash: 16?][partition: 4][foreign value bytes?]``."""

    name = "fk_response"

    def to_bytes(self, value: SubscriptionResponseWrapper) -> bytes:
        flags = (0 if value.hash is None else 1) | (0 if value.foreign_value is None else 2)
        return (bytes((_VERSION, flags)) + (value.hash or b"")
                + _INT.pack(value.primary_partition) + (value.foreign_value or b""))

    def from_bytes(self, data: bytes) -> SubscriptionResponseWrapper:
        data = bytes(data)
        if data[0] != _VERSION:
            raise SerializationError(f"unknown subscription response version {data[0]}")
        flags, offset = data[1], 2
        hash_ = None
        if flags & 1:
            hash_ = data[offset:offset + _HASH_SIZE]
            offset += _HASH_SIZE
        partition = _INT.unpack_from(data, offset)[0]
        foreign = data[offset + 4:] if flags & 2 else None
        return SubscriptionResponseWrapper(hash_, foreign, partition)


def response_partitioner(topic: str, key: Any, value: SubscriptionResponseWrapper,
                         partitions: int) -> int:
    """Responses go back to the partition the subscribing left row lives on."""
    return value.primary_partition


def combined_prefix(fk_bytes: bytes) -> bytes:
    return _INT.pack(len(fk_bytes)) + fk_bytes


def _increment(data: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``data``."""
    stripped = data.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))


# -- left side: send subscriptions --------------------------------------------------------------


class SubscriptionSendProcessor(Processor[Any, Any]):
    """Turns each left-table change into subscription messages keyed by (serialized) FK.

    Inner join: a null FK does not join (a row whose FK becomes null has its result deleted,
    and one whose FK stops being null joins again, as fixed in Kafka 4.1 by KAFKA-16407/16434);
    an FK change unsubscribes the old FK silently and subscribes the new one with
    PROPAGATE_NULL (so a stale result is cleared), an update keeping its FK subscribes with
    PROPAGATE_ONLY (no idempotent tombstone, as Kafka); a delete unsubscribes with
    DELETE_AND_PROPAGATE. Left join: a null FK still subscribes (with
    a null key) so the joiner sees ``(value, None)``. Where Kafka's left join sends both an
    unsubscribe-and-propagate to the old FK and a propagate to the new one (two identical
    results), this sends one message that produces the result, so each left update yields one
    output as in the docs table (reference §2.4).
    """

    def __init__(self, left_store_name: str, extractor: Callable[[Any, Any], Any],
                 left_join: bool, fk_serde: Serde[Any] | None) -> None:
        self.left_store_name = left_store_name
        self.extractor = extractor
        self.left_join = left_join
        self.fk_serde_explicit = fk_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = bind_view(context, self.left_store_name)  # a store or a value getter
        self.left_store_name = view_name(self.left_store_name)
        self.pk_serde = store.key_serde
        self.value_serde = store.value_serde
        self.fk_serde = topic_key_serde(self.fk_serde_explicit, context.app_config)

    def _fk_bytes(self, key: Any, value: Any) -> bytes | None:
        fk = self.extractor(key, value)  # (key, value) -> fk, Kafka 4.0's BiFunction form
        return None if fk is None else self.fk_serde.serialize(self.left_store_name, fk)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None or not record.value.is_latest:
            return  # KIP-914: an out-of-order update of a versioned table subscribes nothing
        new, old = record.value.new, record.value.old
        if new is None and old is None:
            return
        partition = self.context.task_id.partition
        wrapped: list[tuple[bytes | None, bytes]] = []  # (hash, pk), made by the first send

        def send(fk: bytes | None, instruction: Instruction) -> None:
            # as Kafka's SubscriptionSendProcessor, the value is hashed (serialized) only when
            # a subscription is sent: an update that sends none never meets the value serde
            if not wrapped:
                wrapped.append((value_hash(self.value_serde.serialize(self.left_store_name, new)),
                                self.pk_serde.serialize(self.left_store_name, record.key)))
            new_hash, pk = wrapped[0]
            wrapper = SubscriptionWrapper(new_hash, instruction, pk, partition)
            self.context.forward(Record(fk, wrapper, record.timestamp, record.headers))

        new_fk = None if new is None else self._fk_bytes(record.key, new)
        old_fk = None if old is None else self._fk_bytes(record.key, old)
        if self.left_join:
            if new is None:  # delete: unsubscribe silently; the null-FK subscription answers
                # with the tombstone, stamped with the delete's own time (as Kafka's "hack")
                if old_fk is not None:
                    send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                send(None, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
                return
            if old_fk is not None and old_fk != new_fk:
                send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if new is None:  # delete: clear the result if the row had a foreign key
            if old_fk is not None:
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            return
        if new_fk is None:
            log.debug("fk join %s: a null foreign key does not join", self.left_store_name)
            if old_fk is not None:  # the previous result is gone (KAFKA-16434)
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            return
        if old_fk is None:  # new row, or its first foreign key (KAFKA-16407)
            send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
            return
        if new_fk != old_fk:
            send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        # same FK: if it does not join now, it did not join before either (no stale result)
        send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)


# -- right side: the subscription store ---------------------------------------------------------


class SubscriptionReceiveProcessor(Processor[Any, Any]):
    """Records (or removes) a subscription under ``[fk length][fk][pk]``, then passes it on."""

    def __init__(self, subscription_store_name: str) -> None:
        self.store_name = subscription_store_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[bytes | None, SubscriptionWrapper]) -> None:
        wrapper = record.value
        if wrapper is None:
            return
        fk = record.key
        if fk is None:
            if wrapper.instruction is not Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                log.debug("fk join: dropping a subscription with a null foreign key")
                return
        else:
            slot = combined_prefix(fk) + wrapper.primary_key
            if wrapper.instruction in (Instruction.DELETE_KEY_AND_PROPAGATE,
                                       Instruction.DELETE_KEY_NO_PROPAGATE):
                self.store.delete(slot)
            else:
                self.store.put(slot, wrapper, record.timestamp)
        self.context.forward(record)


class SubscriptionJoinProcessor(Processor[Any, Any]):
    """Answers a subscription from the right table (Kafka's ``SubscriptionJoinProcessor``)."""

    def __init__(self, right_store_name: str, fk_serde: Serde[Any] | None,
                 right_value_serde: Serde[Any] | None) -> None:
        self.right_store_name = right_store_name
        self.fk_serde_explicit = fk_serde
        self.value_serde_explicit = right_value_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.right_store = bind_view(context, self.right_store_name)
        self.right_store_name = view_name(self.right_store_name)
        self.fk_serde = topic_key_serde(self.fk_serde_explicit, context.app_config)
        self.value_serde = internal_value_serde(self.value_serde_explicit, context.app_config)

    def process(self, record: Record[bytes | None, SubscriptionWrapper]) -> None:
        wrapper = record.value
        instruction = wrapper.instruction
        if instruction is Instruction.DELETE_KEY_NO_PROPAGATE:
            return
        found = None
        if record.key is not None:
            fk = self.fk_serde.deserialize(self.right_store_name, record.key)
            found = self.right_store.get_with_timestamp(fk)
        timestamp = record.timestamp if found is None else max(record.timestamp, found[1])
        if instruction is Instruction.DELETE_KEY_AND_PROPAGATE:
            foreign = None
        elif found is None:
            if instruction is Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE:
                return
            foreign = None
        else:
            foreign = self.value_serde.serialize(self.right_store_name, found[0])
        response = SubscriptionResponseWrapper(wrapper.hash, foreign, wrapper.primary_partition)
        self.context.forward(Record(wrapper.primary_key, response, timestamp, record.headers))


class ForeignTableJoinProcessor(Processor[Any, Any]):
    """A right-table update fans out to every subscribed left key (prefix scan by FK)."""

    def __init__(self, subscription_store_name: str, fk_serde: Serde[Any] | None,
                 right_value_serde: Serde[Any] | None) -> None:
        self.store_name = subscription_store_name
        self.fk_serde_explicit = fk_serde
        self.value_serde_explicit = right_value_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.store_name)
        self.fk_serde = topic_key_serde(self.fk_serde_explicit, context.app_config)
        self.value_serde = internal_value_serde(self.value_serde_explicit, context.app_config)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None or not record.value.is_latest:
            return  # KIP-914: an out-of-order update of a versioned table answers nothing
        prefix = combined_prefix(self.fk_serde.serialize(self.store_name, record.key))
        subscribers = [wrapper for slot, wrapper in self.store.range(prefix, _increment(prefix))
                       if bytes(slot).startswith(prefix)]
        if not subscribers:
            return
        # Kafka forwards the right value as it is and its response sink serializes it, so a
        # value nobody subscribed to is never serialized (a right table whose values its
        # serde cannot write, e.g. an unmaterialized map_values to Long under a String
        # default, fails only once a left row subscribes to it)
        foreign = self.value_serde.serialize(self.store_name, record.value.new)
        for wrapper in subscribers:
            response = SubscriptionResponseWrapper(wrapper.hash, foreign,
                                                   wrapper.primary_partition)
            self.context.forward(Record(wrapper.primary_key, response, record.timestamp,
                                        record.headers))


# -- back on the left side: resolve responses ---------------------------------------------------


class ResponseJoinProcessor(Processor[Any, Any]):
    """Joins a response with the left row it answers, if that row has not changed since."""

    def __init__(self, left_store_name: str, joiner: Callable[[Any, Any], Any], left_join: bool,
                 right_value_serde: Serde[Any] | None) -> None:
        self.left_store_name = left_store_name
        self.joiner = joiner
        self.left_join = left_join
        self.value_serde_explicit = right_value_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.left_store = bind_view(context, self.left_store_name)
        self.left_store_name = view_name(self.left_store_name)
        self.value_serde = internal_value_serde(self.value_serde_explicit, context.app_config)

    def process(self, record: Record[bytes, SubscriptionResponseWrapper]) -> None:
        store = self.left_store
        key = store.key_serde.deserialize(self.left_store_name, record.key)
        found = store.get_with_timestamp(key)  # any table store, versioned ones too
        current = None if found is None else found[0]
        current_hash = value_hash(store.value_serde.serialize(self.left_store_name, current))
        response = record.value
        if response.hash != current_hash:
            log.debug("fk join %s: dropping a stale response", self.left_store_name)
            return
        foreign = self.value_serde.deserialize(self.left_store_name, response.foreign_value)
        if foreign is None and (not self.left_join or current is None):
            result = None
        else:
            result = self.joiner(current, foreign)
        self.context.forward(Record(key, result, record.timestamp, record.headers))


class ForeignKeyJoinResultProcessor(CacheForwarding, Processor[Any, Any]):
    """``KTABLE-FK-JOIN-OUTPUT``: the result table (a table source; stores it if materialized).

    Like Kafka's it forwards every result, so a tombstone for a key the result never held is
    forwarded too (reference §2.4 rows 2-3) - unless the record cache is on and it is
    materialized: then, as Kafka's KTableSource with a caching store, it writes through the
    cache, whose flush forwards the latest change per key and nothing for such a tombstone.
    """

    def __init__(self, store_name: str | None) -> None:
        self.store_name = store_name
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.store_name is not None:
            self.store = context.get_state_store(self.store_name)
        self._init_cache_forwarding(context, enable=self.store is not None)

    def process(self, record: Record[Any, Any]) -> None:
        old = None
        if self.store is not None:
            if self._put_cached(record, record.key, record.value, record.timestamp):
                return
            old = self.store.get(record.key)
            self.store.put(record.key, record.value, record.timestamp)
        self.context.forward(record.with_value(Change(record.value, old)))
