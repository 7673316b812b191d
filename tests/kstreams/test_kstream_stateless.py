"""Stateless KStream operators (reference §1.2, output timestamps §1.8)."""

from __future__ import annotations

from streams import Serdes, StreamsBuilder
from streams.testing import TestRecord, TopologyTestDriver

S, L = Serdes.string(), Serdes.long()


def run(build, records, out_serdes=(S, L), in_serdes=(S, L)):
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde=in_serdes[0], value_serde=in_serdes[1])
    result = build(stream)
    if result is not None:
        result.to("out", key_serde=out_serdes[0], value_serde=out_serdes[1])
    with TopologyTestDriver(builder.build()) as driver:
        inp = driver.create_input_topic("in", *in_serdes)
        out = driver.create_output_topic("out", *out_serdes)
        for record in records:
            inp.pipe_input(*record)
        return out.read_records_to_list()


def test_filter_and_filter_not() -> None:
    records = [("a", 1, 10), ("b", 6, 20), ("c", 3, 30)]
    assert run(lambda s: s.filter(lambda k, v: v > 2), records) == [
        TestRecord("b", 6, 20), TestRecord("c", 3, 30)]
    assert run(lambda s: s.filter_not(lambda k, v: v > 2), records) == [TestRecord("a", 1, 10)]


def test_map_map_values_and_select_key() -> None:
    records = [("a", 1, 10), ("b", 2, 20)]
    assert run(lambda s: s.map(lambda k, v: (k * 2, v + 100)), records) == [
        TestRecord("aa", 101, 10), TestRecord("bb", 102, 20)]
    assert run(lambda s: s.map_values(lambda v: str(v)), records, (S, S)) == [
        TestRecord("a", "1", 10), TestRecord("b", "2", 20)]
    assert run(lambda s: s.select_key(lambda k, v: f"{k}{v}"), records) == [
        TestRecord("a1", 1, 10), TestRecord("b2", 2, 20)]


def test_flat_map_and_flat_map_values_inherit_the_input_timestamp() -> None:
    records = [("a", 3, 7), ("b", 0, 8)]
    assert run(lambda s: s.flat_map(lambda k, v: [(f"{k}{i}", i) for i in range(v)]),
               records) == [TestRecord("a0", 0, 7), TestRecord("a1", 1, 7),
                            TestRecord("a2", 2, 7)]
    assert run(lambda s: s.flat_map_values(lambda v: [v, -v]), records) == [
        TestRecord("a", 3, 7), TestRecord("a", -3, 7), TestRecord("b", 0, 8),
        TestRecord("b", 0, 8)]


def test_peek_passes_records_through_and_foreach_is_terminal() -> None:
    peeked: list[tuple[str, int]] = []
    seen: list[tuple[str, int]] = []

    def build(stream):
        stream.foreach(lambda k, v: seen.append((k, v)))
        return stream.peek(lambda k, v: peeked.append((k, v)))

    assert run(build, [("a", 1, 1), ("b", 2, 2)]) == [TestRecord("a", 1, 1),
                                                     TestRecord("b", 2, 2)]
    assert peeked == seen == [("a", 1), ("b", 2)]


def test_merge_unions_both_inputs_in_arrival_order() -> None:
    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=L)
    right = builder.stream("right", key_serde=S, value_serde=L)
    left.merge(right.map_values(lambda v: v * 10)).to("out", key_serde=S, value_serde=L)
    with TopologyTestDriver(builder.build()) as driver:
        lin = driver.create_input_topic("left", S, L)
        rin = driver.create_input_topic("right", S, L)
        out = driver.create_output_topic("out", S, L)
        lin.pipe_input("a", 1, 5)
        rin.pipe_input("b", 2, 3)
        lin.pipe_input("c", 3, 9)
        assert out.read_records_to_list() == [TestRecord("a", 1, 5), TestRecord("b", 20, 3),
                                              TestRecord("c", 3, 9)]


def test_merge_ors_the_repartition_flag() -> None:
    builder = StreamsBuilder()
    plain = builder.stream("a")
    rekeyed = builder.stream("b").select_key(lambda k, v: v)
    assert not plain.merge(plain.filter(lambda k, v: True)).repartition_required
    assert plain.merge(rekeyed).repartition_required


def test_value_only_operators_never_mark_key_changers_do() -> None:
    s = StreamsBuilder().stream("in")
    for op in (s.filter(lambda k, v: True), s.filter_not(lambda k, v: True),
               s.map_values(str), s.flat_map_values(lambda v: [v]), s.peek(print)):
        assert not op.repartition_required
    for op in (s.map(lambda k, v: (k, v)), s.flat_map(lambda k, v: []),
               s.select_key(lambda k, v: k)):
        assert op.repartition_required


def test_headers_pass_through_every_stateless_operator() -> None:
    headers = [("trace", b"42"), ("empty", None)]
    out = run(lambda s: s.filter(lambda k, v: True).map_values(lambda v: v + 1)
              .map(lambda k, v: (k, v)).flat_map_values(lambda v: [v]).select_key(lambda k, v: k),
              [("a", 1, 5, headers)])
    assert out == [TestRecord("a", 2, 5, headers)]
    assert out[0] != TestRecord("a", 2, 5)  # headers are part of equality


def test_null_keys_and_values_flow_through_stateless_operators() -> None:
    assert run(lambda s: s.map_values(lambda v: v), [(None, None, 1), (None, 3, 2)]) == [
        TestRecord(None, None, 1), TestRecord(None, 3, 2)]
