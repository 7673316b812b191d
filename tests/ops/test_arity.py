"""A function with the wrong number of parameters is reported when the topology is defined,
naming the operator and how it calls the function (not on the first record)."""

from __future__ import annotations

import functools

import pytest

from streams import Serdes, SessionWindows, StreamsBuilder, TimeWindows
from streams.dsl.arity import ArityError

S = Serdes.string()


def stream():
    return StreamsBuilder().stream("in", key_serde=S, value_serde=S)


@pytest.mark.parametrize(("build", "operator", "call"), [
    (lambda s: s.filter(lambda v: True), "KStream.filter", "predicate(key, value)"),
    (lambda s: s.map_values(lambda k, v, x: v), "KStream.map_values", "mapper(key, value)"),
    (lambda s: s.map(lambda kv: kv), "KStream.map", "mapper(key, value)"),
    (lambda s: s.flat_map_values(lambda: []), "KStream.flat_map_values", "mapper(value)"),
    (lambda s: s.join(s.to_table(), lambda a, b, c, d: a), "KStream.join",
     "joiner(key, left_value, right_value)"),
    (lambda s: s.peek(lambda k, v, extra: None), "KStream.peek", "action(key, value)"),
    (lambda s: s.group_by(lambda v: v), "KStream.group_by", "key_selector(key, value)"),
    (lambda s: s.split().branch(lambda v: True), "BranchedKStream.branch",
     "predicate(key, value)"),
    (lambda s: s.join(s, lambda a: a, None), "KStream.join",
     "joiner(left_value, right_value)"),
    (lambda s: s.group_by_key().reduce(lambda v: v), "KGroupedStream.reduce",
     "reducer(aggregate, value)"),
    (lambda s: s.group_by_key().aggregate(lambda: 0, lambda k, v: 0), "KGroupedStream.aggregate",
     "aggregator(key, value, aggregate)"),
    (lambda s: s.group_by_key().aggregate(lambda x: 0, lambda k, v, a: 0),
     "KGroupedStream.aggregate", "initializer()"),
    (lambda s: s.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10))
     .aggregate(lambda: 0, lambda k, v: 0), "TimeWindowedKStream.aggregate",
     "aggregator(key, value, aggregate)"),
    (lambda s: s.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10))
     .aggregate(lambda: 0, lambda k, v, a: 0, lambda a, b: a), "SessionWindowedKStream.aggregate",
     "merger(key, aggregate1, aggregate2)"),
    (lambda s: s.to_table().filter(lambda v: True), "KTable.filter", "predicate(key, value)"),
    (lambda s: s.to_table().map_values(lambda k, v, x: v), "KTable.map_values",
     "mapper(key, value)"),
    (lambda s: s.to_table().group_by(lambda v: v), "KTable.group_by", "selector(key, value)"),
    (lambda s: s.to_table().group_by(lambda k, v: (k, v)).aggregate(
        lambda: 0, lambda k, v, a: a, lambda k, v: 0), "KGroupedTable.aggregate",
     "subtractor(key, value, aggregate)"),
    (lambda s: s.to_table().group_by(lambda k, v: (k, v)).reduce(lambda a, v: a, lambda a: a),
     "KGroupedTable.reduce", "subtractor(aggregate, value)"),
    (lambda s: s.group_by_key().cogroup(lambda k, v: 0), "KGroupedStream.cogroup",
     "aggregator(key, value, aggregate)"),
])
def test_wrong_arity_names_the_operator_and_the_call(build, operator, call) -> None:
    with pytest.raises(ArityError) as info:
        build(stream())
    message = str(info.value)
    assert message.startswith(operator + ":") and call in message, message
    assert isinstance(info.value, TypeError)


def test_functions_of_every_callable_shape_are_accepted() -> None:
    def two(key, value, unused=None):
        return True

    class Callable2:
        def __call__(self, key, value):
            return True

    s = stream()
    s.filter(two).filter(Callable2()).filter(lambda *args: True)
    s.filter(functools.partial(lambda prefix, k, v: True, "x"))
    s.map_values(str.upper).map_values(len)  # builtins and methods
    s.group_by_key().aggregate(dict, lambda k, v, a: a)
    with pytest.raises(ArityError, match="expected a function"):
        s.filter("not callable")
