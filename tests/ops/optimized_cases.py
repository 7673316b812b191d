"""The topologies tests/ops/test_optimization.py compares with Kafka Streams' describe():
each builds the program of the case of the same name in java/OptimizedTopologies.java."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams import Serdes, StreamsBuilder, TimeWindows

S = Serdes.string()


def _in(b: StreamsBuilder) -> Any:
    return b.stream("in", key_serde=S, value_serde=S)


def case1(b: StreamsBuilder) -> None:  # two aggregations after one map
    m = _in(b).map(lambda k, v: (v, k))
    m.group_by_key().count().to_stream().to("out1")
    m.group_by_key().reduce(lambda a, c: a + c).to_stream().to("out2")


def case2(b: StreamsBuilder) -> None:  # a filter moves behind; map_values keeps its topic
    m = _in(b).select_key(lambda k, v: v)
    m.filter(lambda k, v: True).group_by_key().count().to_stream().to("out1")
    m.map_values(lambda v: v + "x").group_by_key().count().to_stream().to("out2")


def case3(b: StreamsBuilder) -> None:  # a source table (no repartition)
    b.table("tin", key_serde=S, value_serde=S, materialized="tstore").to_stream().to("tout")


def case4(b: StreamsBuilder) -> None:  # a named store names the shared topic; a sink stays
    from streams import Materialized
    m = _in(b).map(lambda k, v: (v, k))
    m.group_by_key().count(Materialized("c1")).to_stream().to("out1")
    m.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(60_000)).count() \
        .to_stream().to("out2")
    m.to("out3")


def case5(b: StreamsBuilder) -> None:  # one repartition: renamed after its topic
    _in(b).map(lambda k, v: (v, k)).group_by_key().count().to_stream().to("out1")


def case6(b: StreamsBuilder) -> None:
    _in(b).map(lambda k, v: (v, k)).filter(lambda k, v: True).group_by_key().count() \
        .to_stream().to("out1")


def case7(b: StreamsBuilder) -> None:  # a join and an aggregation share one topic
    m = _in(b).select_key(lambda k, v: v)
    t = b.table("t", key_serde=S, value_serde=S)
    m.join(t, lambda a, c: a + c).to("out1")
    m.group_by_key().count().to_stream().to("out2")


def case8(b: StreamsBuilder) -> None:  # two group_by: two key changes, nothing to merge
    s = _in(b)
    s.group_by(lambda k, v: v).count().to_stream().to("out1")
    s.group_by(lambda k, v: v).count().to_stream().to("out2")


CASES: dict[str, Callable[[StreamsBuilder], None]] = {
    name: fn for name, fn in globals().items() if name.startswith("case")}
