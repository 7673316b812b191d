"""Word count end to end on the embedded broker, under both processing guarantees."""

from __future__ import annotations

import pytest
from helpers import wait_until

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder
from streams.runtime import State

from .kafka_io import create_topics, latest_by_key, produce, read_all

LINES = ["hello kafka streams", "kafka python", "hello again kafka", "streams streams"]
EXPECTED = {"hello": 2, "kafka": 3, "streams": 3, "python": 1, "again": 1}


def word_count_topology():
    builder = StreamsBuilder()
    lines = builder.stream("text-input", key_serde=Serdes.string(), value_serde=Serdes.string())
    counts = (lines.flat_map_values(lambda line: line.lower().split())
                   .group_by(lambda key, word: word)
                   .count(Materialized("word-counts")))
    counts.to_stream().to("word-counts", key_serde=Serdes.string(), value_serde=Serdes.long())
    return builder.build()


def config(broker, tmp_path, guarantee: str, app_id: str = "wordcount", **extra):
    return {"application.id": app_id, "bootstrap.servers": broker.bootstrap,
            "processing.guarantee": guarantee, "commit.interval.ms": 100,
            "state.dir": str(tmp_path / "state"), **extra}


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_word_count_end_to_end(broker, tmp_path, guarantee) -> None:
    create_topics(broker.bootstrap, {"text-input": 3})
    produce(broker.bootstrap, "text-input",
            [(f"k{i}".encode(), line.encode(), 1000 + i) for i, line in enumerate(LINES)])
    # Record cache off: the exactly-once check below counts every single update.
    streams = KafkaStreams(word_count_topology(), config(
        broker, tmp_path, guarantee, **{"statestore.cache.max.bytes": 0}))
    streams.start()
    try:
        assert streams.wait_for_state(State.RUNNING, timeout=30)
        records = read_all(broker.bootstrap, "word-counts",
                           until=lambda rs: latest_by_key(rs) == EXPECTED)
        assert latest_by_key(records) == EXPECTED
        if guarantee == "exactly_once_v2":  # one update per word occurrence, no duplicates
            assert len(records) == sum(EXPECTED.values())
        view = streams.store("word-counts")
        wait_until(lambda: dict(view.all()) == EXPECTED, message="store contents")
        assert view.get("kafka") == 3
    finally:
        assert streams.close(timeout=30)
    assert streams.state is State.NOT_RUNNING
    # Internal topics exist with the right partition counts (reference §3.3).
    repartition = read_all(broker.bootstrap, "wordcount-word-counts-repartition",
                           isolation="read_uncommitted")
    assert {r.partition for r in repartition} <= {0, 1, 2}
