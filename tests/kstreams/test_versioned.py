"""Versioned key-value stores (KIP-889), versioned tables in the DSL (KIP-914) and the
stream-table join grace period (KIP-923), on the TopologyTestDriver and on the store itself.
Kafka Streams' own driver agrees on the DSL cases (tests/reference/dsl_cases.py, versioned())."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import (
    Joined,
    Materialized,
    Serdes,
    Stores,
    StreamsBuilder,
    VersionedRecord,
)
from streams.state.memory import InMemoryBytesStore
from streams.state.rocksdb import RocksDBBytesStore
from streams.state.versioned import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedKeyValueStore,
)
from streams.testing import TopologyTestDriver

S = Serdes.string()
CONFIG = {"application.id": "versioned", "default.key.serde": "string",
          "default.value.serde": "string"}


def store(history: int = 100, inner: object = None, log: list | None = None
          ) -> VersionedKeyValueStore:
    logger = None if log is None else (lambda k, v, ts: log.append((k, v, ts)))
    return VersionedKeyValueStore("v", inner or InMemoryBytesStore("v"), S, S, history,
                                  logger=logger)


# -- the store ----------------------------------------------------------------------------------


def test_get_latest_and_as_of_with_out_of_order_puts() -> None:
    s = store()
    assert s.put("k", "a", 10) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert s.put("k", "c", 30) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert s.put("k", "b", 20) == 30  # out of order: valid until the next version
    assert s.get("k") == VersionedRecord("c", 30, None)
    assert s.get("k", 9) is None
    assert s.get("k", 10) == VersionedRecord("a", 10, 20)
    assert s.get("k", 25) == VersionedRecord("b", 20, 30)
    assert s.get("k", 1000) == VersionedRecord("c", 30, None)
    assert s.put("k", "B", 20) == 30  # same timestamp: replaced
    assert s.get("k", 20).value == "B"
    assert s.get("missing") is None and s.get("missing", 5) is None


def test_tombstones_end_a_version_and_bound_later_out_of_order_puts() -> None:
    s = store()
    s.put("k", "a", 10)
    s.put("k", None, 20)
    assert s.get("k") is None
    assert s.get("k", 15) == VersionedRecord("a", 10, 20)
    assert s.get("k", 25) is None
    assert s.put("k", "x", 5) == 10
    s.put("k", "y", 15)  # before the tombstone: valid until it
    assert s.get("k", 17) == VersionedRecord("y", 15, 20)
    deleted = s.delete("k", 12)
    assert deleted == VersionedRecord("a", 10, 15)
    assert s.get("k", 13) is None


def test_a_tombstone_replacing_the_only_version_leaves_nothing() -> None:
    """As Kafka's store: no trace of the delete, so an earlier put becomes the latest."""
    s = store()
    s.put("k", "a", 10)
    assert s.put("k", None, 10) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert s.put("k", "early", 5) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert s.get("k", 20) == VersionedRecord("early", 5, None)
    # with an older version the delete stays a boundary
    s.put("j", "a", 1)
    s.put("j", "b", 10)
    s.put("j", None, 10)
    assert s.put("j", "c", 5) == 10
    assert s.get("j", 20) is None


def test_history_retention_is_the_grace_and_the_latest_version_never_expires() -> None:
    s = store(history=10)
    s.put("k", "a", 0)
    s.put("k", "b", 5)
    s.put("other", "z", 50)  # stream time 50: the bound is 40
    assert s.put("k", "late", 39) == PUT_RETURN_CODE_NOT_PUT
    assert s.get("k", 5) == VersionedRecord("b", 5, None)  # latest covers it: never expires
    assert s.get("k", 2) is None  # history past the retention
    assert s.put("k", "c", 45) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert s.get("k", 42) == VersionedRecord("b", 5, 45)
    assert [r.value for r in s.versions("k")] == ["b", "c"]  # "a" can never be read again


def test_changelog_replay_rebuilds_the_same_history(tmp_path: Path) -> None:
    log: list = []
    s = store(history=20, inner=RocksDBBytesStore("v", tmp_path / "a"), log=log)
    puts = [("k", "a", 1), ("k", "c", 9), ("k", "b", 5), ("j", "x", 3), ("k", None, 12),
            ("j", "y", 40), ("k", "late", 2)]
    codes = [s.put(k, v, ts) for k, v, ts in puts]
    assert codes[-1] == PUT_RETURN_CODE_NOT_PUT
    # every put is logged as Kafka's ChangeLoggingVersionedKeyValueBytesStore logs it
    assert [(S.deserialize("", k), None if v is None else S.deserialize("", v), ts)
            for k, v, ts in log] == puts
    restored = store(history=20, inner=RocksDBBytesStore("v", tmp_path / "b"))
    for key, value, ts in log:
        restored.restore(key, value, ts)
    for key in ("k", "j"):
        for at in range(0, 45):
            assert restored.get(key, at) == s.get(key, at), (key, at)
    s.close()
    restored.close()


def test_store_builder_declares_kafkas_changelog_config() -> None:
    builder = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("hist", 60_000), S, S)
    topology = StreamsBuilder().add_state_store(builder).build()
    assert builder.kind == "versioned" and builder.retention_ms == 60_000
    topic = topology.internal_topics["hist-changelog"]
    assert topic.configs == {"cleanup.policy": "compact",
                             "min.compaction.lag.ms": str(60_000 + 86_400_000)}


# -- the DSL ------------------------------------------------------------------------------------


def versioned_join(grace: int | None, history: int = 100, left: bool = False,
                   store_type: str = "rocksdb") -> StreamsBuilder:
    builder = StreamsBuilder()
    supplier = (Stores.persistent_versioned_key_value_store("prices", history)
                if store_type == "rocksdb"
                else Stores.in_memory_versioned_key_value_store("prices", history))
    table = builder.table("prices", key_serde=S, value_serde=S,
                          materialized=Materialized.as_(supplier))
    orders = builder.stream("orders", key_serde=S, value_serde=S)
    joined = Joined.with_(S, S, S) if grace is None else Joined.with_grace_period(grace)
    method = orders.left_join if left else orders.join
    method(table, lambda key, order, price: f"{key}:{order}@{price}", joined).to(
        "out", key_serde=S, value_serde=S)
    table.to_stream().to("changes", key_serde=S, value_serde=S)
    return builder


def run(builder: StreamsBuilder, records: list[tuple[str, str, str | None, int]]
        ) -> dict[str, list[tuple]]:
    with TopologyTestDriver(builder.build(), dict(CONFIG), initial_wall_clock_time=0) as driver:
        inputs = {t: driver.create_input_topic(t, S, S) for t in ("prices", "orders")}
        for topic, key, value, ts in records:
            inputs[topic].pipe_input(key, value, timestamp=ts)
        return {t: [(r.key, r.value, r.timestamp)
                    for r in driver.create_output_topic(t, S, S).read_records_to_list()]
                for t in ("out", "changes")}


PRICES = [("prices", "a", "1", 1), ("prices", "a", "10", 10)]


@pytest.mark.parametrize("store_type", ["rocksdb", "memory"])
def test_stream_table_join_reads_the_table_as_of_the_stream_record(store_type: str) -> None:
    out = run(versioned_join(None, store_type=store_type),
              [*PRICES, ("orders", "a", "o5", 5), ("orders", "a", "o12", 12),
               ("orders", "a", "o0", 0), ("orders", "b", "o7", 7)])
    assert out["out"] == [("a", "a:o5@1", 5), ("a", "a:o12@10", 12)]


def test_grace_period_waits_for_late_table_updates() -> None:
    records = [*PRICES, ("orders", "a", "o5", 5), ("prices", "a", "4", 4),
               ("orders", "a", "o12", 12), ("orders", "a", "o16", 16),
               ("orders", "a", "o2", 2)]
    # without grace o5 is joined before the late price 4 arrives
    assert run(versioned_join(None), records)["out"] == [
        ("a", "a:o5@1", 5), ("a", "a:o12@10", 12), ("a", "a:o16@10", 16), ("a", "a:o2@1", 2)]
    # with a grace of 10, o5 waits until stream time 15 (o16 arrives) and sees price 4; o2 is
    # already older than stream time - grace, so it is joined at once; o12 and o16 still wait
    assert run(versioned_join(10), records)["out"] == [
        ("a", "a:o5@4", 5), ("a", "a:o2@1", 2)]


def test_out_of_order_table_updates_reach_to_stream_but_expired_ones_do_not() -> None:
    out = run(versioned_join(None, history=20),
              [*PRICES, ("prices", "a", "4", 4), ("prices", "b", "x", 50),
               ("prices", "a", "29", 29), ("prices", "a", "31", 31)])
    assert out["changes"] == [("a", "1", 1), ("a", "10", 10), ("a", "4", 4), ("b", "x", 50),
                              ("a", "31", 31)]


def test_versioned_table_changelog_and_buffer_changelog() -> None:
    builder = versioned_join(5)
    with TopologyTestDriver(builder.build(), dict(CONFIG), initial_wall_clock_time=0) as driver:
        prices, orders = (driver.create_input_topic(t, S, S) for t in ("prices", "orders"))
        prices.pipe_input("a", "1", timestamp=1)
        prices.pipe_input("a", None, timestamp=3)
        orders.pipe_input("a", "o2", timestamp=2)
        orders.pipe_input("a", "o9", timestamp=9)
        changelog = driver.create_output_topic("versioned-prices-changelog", S, S)
        assert [(r.key, r.value, r.timestamp) for r in changelog.read_records_to_list()] == [
            ("a", "1", 1), ("a", None, 3)]
        buffer_topic = "versioned-KSTREAM-JOIN-0000000003-Buffer-changelog"
        buffered = driver.create_output_topic(buffer_topic, Serdes.bytes(), Serdes.bytes())
        # two puts, then o2's eviction (a tombstone) once stream time reached 2 + 5
        assert [r.value is None for r in buffered.read_records_to_list()] == [
            False, False, True]
        versioned = driver.get_versioned_key_value_store("prices")
        assert versioned.get("a", 2) == VersionedRecord("1", 1, 3)
        with pytest.raises(TypeError, match="get_versioned_key_value_store"):
            driver.get_key_value_store("prices")
        out = driver.create_output_topic("out", S, S)
        assert [(r.key, r.value) for r in out.read_records_to_list()] == [("a", "a:o2@1")]


def test_left_join_with_grace_joins_missing_rows_with_none() -> None:
    out = run(versioned_join(3, left=True),
              [("orders", "a", "o1", 1), ("prices", "a", "p2", 2), ("orders", "b", "o3", 3),
               ("orders", "a", "o9", 9)])
    assert out["out"] == [("a", "a:o1@None", 1), ("b", "b:o3@None", 3)]


def test_refusals_name_the_problem() -> None:
    builder = StreamsBuilder()
    plain = builder.table("t", key_serde=S, value_serde=S)
    stream = builder.stream("s", key_serde=S, value_serde=S)
    with pytest.raises(ValueError, match="needs a versioned KTable"):
        stream.join(plain, lambda a, b: a, Joined.with_grace_period(5))
    versioned = builder.table("v", key_serde=S, value_serde=S, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("vs", 10)))
    with pytest.raises(ValueError, match="history retention .* at least the join's grace"):
        stream.join(versioned, lambda a, b: a, Joined.with_grace_period(11))
    with pytest.raises(ValueError, match="non-versioned KTables"):
        versioned.filter(lambda k, v: True).suppress(object())
    with pytest.raises(ValueError, match="not supported yet"):
        stream.join(versioned.map_values(lambda v: v), lambda a, b: a)
    with pytest.raises(ValueError, match="versioned store materializes only"):
        stream.group_by_key().count(Materialized.as_(
            Stores.persistent_versioned_key_value_store("counts", 10)))
    with pytest.raises(TypeError, match="versioned store supplier"):
        Materialized.as_(Stores.persistent_window_store("w", 10, 5))


def test_processor_api_versioned_store_from_the_builder() -> None:
    """A Processor API processor keeps a versioned store; reads as of each record's time."""
    from streams import Processor, Record, Topology

    class AsOf(Processor):
        def init(self, context):  # noqa: ANN001, ANN202
            super().init(context)
            self.store = context.get_state_store("hist")

        def process(self, record: Record) -> None:
            if record.value.startswith("set:"):
                self.store.put(record.key, record.value[4:], record.timestamp)
                return
            found = self.store.get(record.key, record.timestamp)
            self.context.forward(record.with_value(None if found is None else found.value))

    topology = Topology()
    topology.add_source("src", "in", key_serde=S, value_serde=S)
    topology.add_processor("asof", AsOf, "src")
    topology.add_state_store(Stores.versioned_key_value_store_builder(
        Stores.in_memory_versioned_key_value_store("hist", 1000), S, S), "asof")
    topology.add_sink("out", "out", "asof", key_serde=S, value_serde=S)
    with TopologyTestDriver(topology, dict(CONFIG), initial_wall_clock_time=0) as driver:
        topic = driver.create_input_topic("in", S, S)
        for value, ts in (("set:x", 10), ("set:y", 20), ("get", 15), ("get", 25), ("get", 5),
                          ("set:w", 12), ("get", 15)):
            topic.pipe_input("k", value, timestamp=ts)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
        assert [r.value for r in out] == ["x", "y", None, "w"]
        assert driver.get_versioned_key_value_store("hist").get("k") == VersionedRecord(
            "y", 20, None)
