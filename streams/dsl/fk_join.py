"""DSL wiring for foreign-key table joins (``KTable.join/left_join(..., foreign_key_extractor=)``).

The graph mirrors Kafka's ``KTableImpl#doJoinOnForeignKey`` (names included):

* left table -> ``...-SUBSCRIPTION-REGISTRATION`` (send) -> sink to the registration topic;
* registration topic -> receive (subscription store) -> subscription join (reads the right
  table) -> sink to the response topic;
* right table -> foreign-table join (prefix scan of the subscription store) -> the same sink;
* response topic -> response resolver (reads the left table, checks the value hash) ->
  ``KTABLE-FK-JOIN-OUTPUT`` (the result table).

The registration topic is co-partitioned with the right table, the response topic with the
left table, so the join works on any number of partitions (the processors are in
``streams/processor/fk_join.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..processor.fk_join import (
    ForeignKeyJoinResultProcessor,
    ForeignTableJoinProcessor,
    ResponseJoinProcessor,
    SubscriptionJoinProcessor,
    SubscriptionReceiveProcessor,
    SubscriptionResponseWrapperSerde,
    SubscriptionSendProcessor,
    SubscriptionWrapperSerde,
    response_partitioner,
)
from ..serde import Serdes
from ..state.stores import StoreBuilder
from .joins import copartition, table_view, view_store_names
from .materialized import Materialized

if TYPE_CHECKING:
    from .ktable import KTable

_FK = "KTABLE-FK-JOIN-"


def foreign_key_join(left: KTable, right: KTable, foreign_key_extractor: Callable[..., Any],
                     joiner: Callable[[Any, Any], Any], kind: str,
                     materialized: Materialized | str | None = None, *,
                     name: str | None = None, table_joined: Any = None) -> KTable:
    """Join each left row with the right row whose key is ``foreign_key_extractor(value)``.

    ``kind`` is "inner" or "left" (reference §2.4). One right update fans out to every left
    key referencing it. ``name`` plays Kafka's ``TableJoined.as(name)``: topics become
    ``<app>-<name>-subscription-registration-topic`` / ``-subscription-response-topic``.
    ``foreign_key_extractor`` takes ``(value)`` or, as Kafka 4.0's BiFunction, ``(key, value)``;
    ``table_joined`` (a ``TableJoined``) gives the name and both tables' partitioners
    (fk_partitioners.py).
    """
    from .ktable import KTable

    if kind not in ("inner", "left"):
        raise ValueError(f"a foreign-key join is 'inner' or 'left', got {kind!r}")
    if not isinstance(right, KTable):
        raise TypeError(f"a foreign-key join needs a KTable, got {type(right).__name__}")
    if foreign_key_extractor is None:
        raise TypeError("a foreign-key join needs foreign_key_extractor=(value) -> key")
    from .fk_partitioners import keyed_extractor, partitioners

    extractor = keyed_extractor(foreign_key_extractor, f"KTable.{kind_method(kind)}")
    name = name or (table_joined.name if table_joined is not None else None)
    registration_partitioner, response_partitioner_ = partitioners(left, right, table_joined)
    builder = left.builder
    topology = builder.topology
    left_join = kind == "left"
    left_node, left_store = table_view(left)
    right_node, right_store = table_view(right)
    fk_serde, right_values = right.key_serde, right.value_serde

    def named(suffix: str, prefix: str) -> str:
        return f"{name}{suffix}" if name else builder.new_name(prefix)

    registration_topic = named("-subscription-registration",
                               _FK + "SUBSCRIPTION-REGISTRATION") + "-topic"
    send_name = named("-subscription-registration-processor", _FK + "SUBSCRIPTION-REGISTRATION")
    registration_sink = named("-subscription-registration-sink", "KTABLE-SINK")
    registration_source = named("-subscription-registration-source", "KSTREAM-SOURCE")
    subscription_store = named("-subscription-store", _FK + "SUBSCRIPTION-STATE-STORE")
    receive_name = named("-subscription-receive", _FK + "SUBSCRIPTION-PROCESSOR")
    subscription_join = named("-subscription-join-foreign", _FK + "SUBSCRIPTION-PROCESSOR")
    foreign_join = named("-foreign-join-subscription", _FK + "SUBSCRIPTION-PROCESSOR")
    response_topic = named("-subscription-response", _FK + "SUBSCRIPTION-RESPONSE") + "-topic"
    response_sink = named("-subscription-response-sink", "KTABLE-SINK")
    response_source = named("-subscription-response-source", "KSTREAM-SOURCE")
    resolver = named("-subscription-response-resolver",
                     _FK + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR")
    result_name = named("-result", _FK + "OUTPUT")
    mat = None if materialized is None else Materialized.of(materialized)
    generated_store = builder.new_store_name(_FK + "OUTPUT-")  # Kafka spends it either way
    result_store = None if mat is None else (mat.name or generated_store)

    subscription_serde = SubscriptionWrapperSerde()
    response_serde = SubscriptionResponseWrapperSerde()
    topology.add_internal_topic(registration_topic, "subscription")
    topology.add_internal_topic(response_topic, "subscription")

    # left side: subscribe
    topology.add_processor(
        send_name,
        lambda: SubscriptionSendProcessor(left_store, extractor, left_join, fk_serde),
        left_node)
    topology.connect_processor_and_state_stores(send_name, *view_store_names(left_store),
                                                read_only=True)
    topology.add_sink(registration_sink, registration_topic, send_name,
                      key_serde=Serdes.bytes(), value_serde=subscription_serde,
                      partitioner=registration_partitioner)

    # right side: remember subscriptions, answer them, fan right updates out
    topology.add_source(registration_source, registration_topic, key_serde=Serdes.bytes(),
                        value_serde=subscription_serde)
    topology.add_processor(receive_name, lambda: SubscriptionReceiveProcessor(subscription_store),
                           registration_source)
    topology.add_state_store(
        StoreBuilder(subscription_store, "kv", Serdes.bytes(), subscription_serde,
                     left_store_type(left, builder)),
        receive_name)
    topology.add_processor(
        subscription_join,
        lambda: SubscriptionJoinProcessor(right_store, fk_serde, right_values), receive_name)
    topology.connect_processor_and_state_stores(subscription_join, *view_store_names(right_store),
                                                read_only=True)
    topology.add_processor(
        foreign_join,
        lambda: ForeignTableJoinProcessor(subscription_store, fk_serde, right_values),
        right_node)
    topology.connect_processor_and_state_stores(foreign_join, subscription_store)
    topology.add_sink(response_sink, response_topic, subscription_join, foreign_join,
                      key_serde=Serdes.bytes(), value_serde=response_serde,
                      partitioner=response_partitioner_ or response_partitioner)
    copartition(topology, registration_source, right_node, operator=receive_name)

    # back on the left: resolve responses into the result table
    topology.add_source(response_source, response_topic, key_serde=Serdes.bytes(),
                        value_serde=response_serde)
    topology.add_processor(
        resolver, lambda: ResponseJoinProcessor(left_store, joiner, left_join, right_values),
        response_source)
    topology.connect_processor_and_state_stores(resolver, *view_store_names(left_store),
                                                read_only=True)
    stored = [result_store]  # the store the output writes, set late by materialize()
    topology.add_processor(result_name, lambda: ForeignKeyJoinResultProcessor(stored[0]),
                           resolver)
    key_serde = (mat.key_serde if mat else None) or left.key_serde
    value_serde = mat.value_serde if mat else None
    if mat is not None and result_store is not None:
        topology.add_state_store(builder.store_builder(result_store, mat, key_serde, value_serde),
                                 result_name)
    copartition(topology, response_source, left_node, operator=resolver)
    result = KTable(builder, result_name, result_store, key_serde, value_serde)
    # Kafka's output is a KTableSource: it offers old values only when named, and is given
    # its (generated) store when a downstream operator needs old values or reads it
    result.offers_old_values = mat is not None and mat.name is not None
    if result_store is None:
        def materialize() -> None:
            stored[0] = result.store_name = generated_store
            topology.add_state_store(
                builder.store_builder(generated_store, Materialized(), key_serde, value_serde),
                result_name)
        result.materialize_hook = materialize
    return result


def kind_method(kind: str) -> str:
    return "join" if kind == "inner" else "left_join"


def left_store_type(table: KTable, builder: Any) -> str:
    """The subscription store lives beside the tables: RocksDB unless the left is in memory."""
    store = builder.topology.stores.get(view_store_names(table_view(table)[1])[0])
    return getattr(store, "store_type", "rocksdb")
