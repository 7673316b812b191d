"""Foreign-key KTable joins through the driver (reference §2.4) plus the subscription machinery.

Docs table conventions: ``fk_extractor(v) = v``; the left value *is* the foreign key; an output
``(k, l, r)`` is key k with ``joiner(l, r)``; ``(k, null)`` is a tombstone. Row 1 holds a right
and a left record: the right one is piped first, as that is the only order giving the table's
single output in the LEFT column. Row 5 is read literally as a left tombstone.
"""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, StreamsBuilder
from streams.processor.api import Record, TaskId
from streams.processor.fk_join import (
    Instruction,
    ResponseJoinProcessor,
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapper,
    SubscriptionWrapperSerde,
    value_hash,
)
from streams.state.kv import KeyValueStore
from streams.state.memory import InMemoryBytesStore
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()


def joiner(left: str | None, right: str | None) -> str:
    return f"{'null' if left is None else left},{'null' if right is None else right}"


def topology(kind: str, materialized: str | None = None, name: str | None = None):
    from streams.dsl.fk_join import foreign_key_join

    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    if name is None:
        method = left.join if kind == "inner" else left.left_join
        result = method(right, joiner, materialized, foreign_key_extractor=lambda v: v)
    else:
        result = foreign_key_join(left, right, lambda v: v, joiner, kind, materialized,
                                  name=name)
    result.to_stream().to("out", key_serde=S, value_serde=S)
    return builder.build()


# (offset, left (k, fk) or None, right (fk, v) or None, inner outputs, left outputs);
# outputs are (key, value) with None = tombstone; the ts of every input is its offset.
ROWS = [
    (1, ("k", "1"), ("1", "foo"), [("k", "1,foo")], [("k", "1,foo")]),
    (2, ("k", "2"), None, [("k", None)], [("k", "2,null")]),
    (3, ("k", "3"), None, [("k", None)], [("k", "3,null")]),
    (4, None, ("3", "bar"), [("k", "3,bar")], [("k", "3,bar")]),
    (5, ("k", None), None, [("k", None)], [("k", None)]),
    (6, ("k", "1"), None, [("k", "1,foo")], [("k", "1,foo")]),
    (7, ("q", "10"), None, [], [("q", "10,null")]),
    (8, ("r", "10"), None, [], [("r", "10,null")]),
    (9, None, ("10", "baz"), [("q", "10,baz"), ("r", "10,baz")],
     [("q", "10,baz"), ("r", "10,baz")]),
]


@pytest.mark.parametrize("materialized", [None, "fk-result"])
@pytest.mark.parametrize("kind", ["inner", "left"])
def test_docs_table_row_by_row(kind: str, materialized: str | None) -> None:
    column = 3 if kind == "inner" else 4
    with TopologyTestDriver(topology(kind, materialized)) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        for row in ROWS:
            offset, left_record, right_record = row[0], row[1], row[2]
            if right_record is not None:
                right.pipe_input(*right_record, offset)
            if left_record is not None:
                left.pipe_input(*left_record, offset)
            assert out.read_records_to_list() == [
                TestRecord(k, v, offset) for k, v in row[column]], f"{kind}, offset {offset}"
        if materialized:
            store = driver.get_key_value_store(materialized)
            assert dict(store.all()) == {"k": "1,foo", "q": "10,baz", "r": "10,baz"}


def test_output_timestamps() -> None:
    """Subscription answers: max(left, right); right-side fan-out: the right update's ts."""
    with TopologyTestDriver(topology("inner")) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right.pipe_input("1", "foo", 50)
        left.pipe_input("k", "1", 10)
        right.pipe_input("1", "bar", 20)
        left.pipe_input("k", "1", 5)  # same FK: answered again, max(5, 20)
        assert out.read_records_to_list() == [
            TestRecord("k", "1,foo", 50), TestRecord("k", "1,bar", 20),
            TestRecord("k", "1,bar", 20)]


def test_right_tombstone_fans_out() -> None:
    for kind, expected in (("inner", [("a", None), ("b", None)]),
                           ("left", [("a", "x,null"), ("b", "x,null")])):
        with TopologyTestDriver(topology(kind)) as driver:
            left = driver.create_input_topic("left", S, S)
            right = driver.create_input_topic("right", S, S)
            out = driver.create_output_topic("out", S, S)
            right.pipe_input("x", "X", 1)
            left.pipe_input("a", "x", 2)
            left.pipe_input("b", "x", 3)
            out.read_records_to_list()
            right.pipe_input("x", None, 4)
            assert out.read_key_values_to_list() == expected


def test_changing_the_foreign_key_unsubscribes_the_old_one() -> None:
    with TopologyTestDriver(topology("left")) as driver:
        left = driver.create_input_topic("left", S, S)
        right = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        right.pipe_input("1", "one", 1)
        right.pipe_input("2", "two", 2)
        left.pipe_input("k", "1", 3)
        left.pipe_input("k", "2", 4)
        assert out.read_key_values_to_list() == [("k", "1,one"), ("k", "2,two")]
        right.pipe_input("1", "uno", 5)  # k no longer references 1
        assert out.is_empty()
        right.pipe_input("2", "dos", 6)
        assert out.read_key_values_to_list() == [("k", "2,dos")]


def test_left_join_null_foreign_key_calls_the_joiner_with_null() -> None:
    """KIP-962: an extractor returning None still yields (value, None) in a left join."""
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    for kind, method in (("inner", left.join), ("left", left.left_join)):
        method(right, joiner, foreign_key_extractor=lambda v: v.partition(":")[2] or None
               ).to_stream().to(f"out-{kind}", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build()) as driver:
        left_in = driver.create_input_topic("left", S, S)
        right_in = driver.create_input_topic("right", S, S)
        inner = driver.create_output_topic("out-inner", S, S)
        left_out = driver.create_output_topic("out-left", S, S)
        right_in.pipe_input("r", "R", 1)
        left_in.pipe_input("k", "a:", 2)
        assert inner.is_empty()  # a null FK does not join
        assert left_out.read_records_to_list() == [TestRecord("k", "a:,null", 2)]
        left_in.pipe_input("k", "b:r", 3)
        assert inner.read_key_values_to_list() == [("k", "b:r,R")]
        assert left_out.read_key_values_to_list() == [("k", "b:r,R")]
        left_in.pipe_input("k", "c:", 4)  # FK becomes null: the inner result is deleted
        assert inner.read_key_values_to_list() == [("k", None)]
        assert left_out.read_key_values_to_list() == [("k", "c:,null")]
        left_in.pipe_input("k", None, 5)
        assert inner.is_empty()  # the inner join never subscribed the null-FK row
        assert left_out.read_key_values_to_list() == [("k", None)]


def test_internal_topics_sub_topologies_and_copartitioning() -> None:
    topo = topology("inner", name="orders-customers")
    assert topo.internal_topics["orders-customers-subscription-registration-topic"].kind \
        == "subscription"
    assert "orders-customers-subscription-response-topic" in topo.internal_topics
    assert "orders-customers-subscription-store" in topo.stores
    subs = {frozenset(s.source_topics) for s in topo.sub_topologies()}
    assert subs == {frozenset({"left", "orders-customers-subscription-response-topic"}),
                    frozenset({"right", "orders-customers-subscription-registration-topic"})}
    assert {"orders-customers-subscription-registration-topic", "right"} \
        in topo.copartition_groups
    assert {"orders-customers-subscription-response-topic", "left"} in topo.copartition_groups
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("left", S, S).pipe_input("k", "1", 1)
        assert {"app-orders-customers-subscription-registration-topic",
                "app-orders-customers-subscription-store-changelog"} \
            <= driver.produced_topic_names()


def test_generated_names_follow_kafka() -> None:
    topo = topology("left")
    nodes = list(topo.nodes)
    for expected in ("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007",
                     "KTABLE-SINK-0000000008", "KSTREAM-SOURCE-0000000009",
                     "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011",
                     "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012",
                     "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013",
                     "KTABLE-SINK-0000000015", "KSTREAM-SOURCE-0000000016",
                     "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017",
                     "KTABLE-FK-JOIN-OUTPUT-0000000018"):
        assert expected in nodes
    assert "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic" in topo.internal_topics
    assert "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic" in topo.internal_topics
    assert "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010" in topo.stores


def test_materialized_result_is_queryable() -> None:
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    result = left.join(right, joiner, Materialized("enriched"), foreign_key_extractor=str)
    assert result.queryable_store_name() == "enriched"
    with TopologyTestDriver(builder.build()) as driver:
        driver.create_input_topic("right", S, S).pipe_input("1", "one", 1)
        driver.create_input_topic("left", S, S).pipe_input("k", "1", 2)
        assert driver.get_key_value_store("enriched").get("k") == "1,one"


def test_wrapper_serdes_round_trip() -> None:
    sub = SubscriptionWrapper(value_hash(b"v"), Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE,
                              b"pk", 3)
    back = SubscriptionWrapperSerde().deserialize("t", SubscriptionWrapperSerde().serialize("t", sub))
    assert (back.hash, back.instruction, back.primary_key, back.primary_partition) == \
        (sub.hash, sub.instruction, b"pk", 3)
    for hash_, value in ((None, None), (value_hash(b"x"), b""), (None, b"val")):
        resp = SubscriptionResponseWrapper(hash_, value, 7)
        serde = SubscriptionResponseWrapperSerde()
        back_resp = serde.deserialize("t", serde.serialize("t", resp))
        assert (back_resp.hash, back_resp.foreign_value, back_resp.primary_partition) == \
            (hash_, value, 7)


class _Context:
    """Just enough ProcessorContext for one processor: a store and a list of forwards."""

    def __init__(self, stores: dict[str, KeyValueStore]) -> None:
        self.stores = stores
        self.forwarded: list[Record] = []
        self.task_id = TaskId(0, 0)
        self.app_config: dict[str, str] = {}

    def get_state_store(self, name: str) -> KeyValueStore:
        return self.stores[name]

    def forward(self, record: Record, child_name: str | None = None) -> None:
        self.forwarded.append(record)


def test_a_stale_response_is_dropped() -> None:
    """A response computed for an older left value (hash mismatch) must not be joined."""
    store = KeyValueStore("left", InMemoryBytesStore("left"), S, S)
    store.put("k", "2", 2)
    context = _Context({"left": store})
    processor = ResponseJoinProcessor("left", joiner, left_join=True, right_value_serde=S)
    processor.init(context)  # type: ignore[arg-type]
    stale = SubscriptionResponseWrapper(value_hash(b"1"), b"one", 0)
    fresh = SubscriptionResponseWrapper(value_hash(b"2"), b"two", 0)
    processor.process(Record(b"k", stale, 3))
    assert context.forwarded == []
    processor.process(Record(b"k", fresh, 4))
    assert context.forwarded == [Record("k", "2,two", 4)]


def test_an_unmaterialized_left_table_is_materialized_for_the_join() -> None:
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S).map_values(lambda v: v + "0")
    right = builder.table("right", key_serde=S, value_serde=S)
    left.join(right, joiner, foreign_key_extractor=lambda v: v).to_stream().to(
        "out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build()) as driver:
        driver.create_input_topic("right", S, S).pipe_input("10", "ten", 1)
        driver.create_input_topic("left", S, S).pipe_input("k", "1", 2)
        out = driver.create_output_topic("out", S, S)
        assert out.read_key_values_to_list() == [("k", "10,ten")]


def test_configured_default_serdes_are_used_when_none_are_given() -> None:
    builder = StreamsBuilder()
    left = builder.table("left")
    right = builder.table("right")
    left.left_join(right, joiner, foreign_key_extractor=lambda v: v).to_stream().to("out")
    config = {"default.key.serde": "string", "default.value.serde": "string"}
    with TopologyTestDriver(builder.build(), config) as driver:
        driver.create_input_topic("right", S, S).pipe_input("1", "one", 1)
        driver.create_input_topic("left", S, S).pipe_input("k", "1", 2)
        out = driver.create_output_topic("out", S, S)
        assert out.read_records_to_list() == [TestRecord("k", "1,one", 2)]


def test_internal_topic_partitions_follow_the_table_they_are_copartitioned_with() -> None:
    """Registrations land on the right table's partitions, responses on the left table's."""
    from streams.runtime.topics import plan_layout

    layout = plan_layout(topology("inner", name="fk"), "app", {"left": 3, "right": 2})
    assert layout.partitions["app-fk-subscription-registration-topic"] == 2
    assert layout.partitions["app-fk-subscription-response-topic"] == 3
    assert layout.partitions["app-fk-subscription-store-changelog"] == 2


def test_inner_update_keeping_an_unjoined_foreign_key_emits_nothing() -> None:
    """Kafka sends PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE when the FK is unchanged: the row did not
    join before either, so no idempotent tombstone (tests/reference/test_dsl_diff)."""
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    left.join(right, joiner, foreign_key_extractor=lambda v: v[:1]).to_stream().to(
        "out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build()) as driver:
        lin = driver.create_input_topic("left", S, S)
        rin = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        lin.pipe_input("k", "c1", 1)
        lin.pipe_input("k", "c2", 2)  # same FK "c", still no right row: nothing
        rin.pipe_input("c", "C", 3)
        lin.pipe_input("k", "c3", 4)  # same FK, joins
        lin.pipe_input("k", "d1", 5)  # FK change to an absent row: the result is deleted
        assert out.read_records_to_list() == [
            TestRecord("k", "c2,C", 3), TestRecord("k", "c3,C", 4), TestRecord("k", None, 5)]


def test_left_join_delete_is_stamped_with_the_delete_time() -> None:
    """Kafka answers a left-join delete through a null-FK subscription, so the tombstone
    carries the delete's timestamp, not max(it, the right row's) (tests/reference)."""
    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    right = builder.table("right", key_serde=S, value_serde=S)
    left.left_join(right, joiner, foreign_key_extractor=lambda v: v[:1]).to_stream().to(
        "out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build()) as driver:
        lin = driver.create_input_topic("left", S, S)
        rin = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        lin.pipe_input("k", "c1", 10)
        rin.pipe_input("c", "C", 39)
        lin.pipe_input("k", None, 38)
        assert out.read_records_to_list() == [
            TestRecord("k", "c1,null", 10), TestRecord("k", "c1,C", 39),
            TestRecord("k", None, 38)]


def test_right_values_are_serialized_only_for_subscribers() -> None:
    """Kafka's foreign-table processor forwards the right value as it is; the response sink
    serializes it (with the right table's value serde, else the default). So a right table
    whose values the default cannot write (an unmaterialized map_values to int under a String
    default) fails only when a left row subscribes to the updated key (tests/reference case
    fk-join-right-values-serialized-only-for-subscribers)."""
    from streams.processor.errors import HandlerFailedError

    builder = StreamsBuilder()
    left = builder.table("left", key_serde=S, value_serde=S)
    lengths = builder.table("right", key_serde=S, value_serde=S).map_values(len)
    left.left_join(lengths, joiner, foreign_key_extractor=lambda v: v).to_stream().to(
        "out", key_serde=S, value_serde=S)
    config = {"default.key.serde": "string", "default.value.serde": "string"}
    with TopologyTestDriver(builder.build(), config) as driver:
        lin = driver.create_input_topic("left", S, S)
        rin = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("out", S, S)
        rin.pipe_input("a", "apple", 1)  # nobody subscribes to "a": not serialized
        lin.pipe_input("k", "b", 2)  # "b" has no right row: the left join answers null
        rin.pipe_input("c", "cocoa", 3)
        assert out.read_records_to_list() == [TestRecord("k", "b,null", 2)]
        with pytest.raises(HandlerFailedError, match="string serde needs str, got int"):
            rin.pipe_input("b", "bean", 4)  # k subscribes to "b": 4 cannot be written
