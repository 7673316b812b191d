"""Word count through the TopologyTestDriver: the API.md example, end to end."""

from __future__ import annotations

from streams import Materialized, Serdes, StreamsBuilder
from streams.testing import TestRecord, TopologyTestDriver


def word_count_topology():
    builder = StreamsBuilder()
    lines = builder.stream("text-input", key_serde=Serdes.string(), value_serde=Serdes.string())
    counts = (lines.flat_map_values(lambda line: line.lower().split())
                   .group_by(lambda key, word: word)
                   .count(Materialized("word-counts")))
    counts.to_stream().to("word-counts", key_serde=Serdes.string(), value_serde=Serdes.long())
    return builder.build()


def test_word_count_matches_the_docs_table() -> None:
    """Reference §1.4: hello, kafka, streams, kafka, kafka, streams at ts 1..6."""
    with TopologyTestDriver(word_count_topology()) as driver:
        inp = driver.create_input_topic("text-input", Serdes.string(), Serdes.string())
        out = driver.create_output_topic("word-counts", Serdes.string(), Serdes.long())
        for ts, word in enumerate(["hello", "kafka", "streams", "kafka", "kafka", "streams"], 1):
            inp.pipe_input(None, word, timestamp=ts)
        assert out.read_records_to_list() == [
            TestRecord("hello", 1, 1), TestRecord("kafka", 1, 2), TestRecord("streams", 1, 3),
            TestRecord("kafka", 2, 4), TestRecord("kafka", 3, 5), TestRecord("streams", 2, 6),
        ]
        store = driver.get_key_value_store("word-counts")
        assert dict(store.all()) == {"hello": 1, "kafka": 3, "streams": 2}
        assert store.approximate_num_entries() == 3


def test_api_example_line_splitting_and_store() -> None:
    with TopologyTestDriver(word_count_topology()) as driver:
        inp = driver.create_input_topic("text-input", Serdes.string(), Serdes.string())
        out = driver.create_output_topic("word-counts", Serdes.string(), Serdes.long())
        inp.pipe_input("k", "hello world hello", timestamp=1000)
        assert out.read_key_values_to_map() == {"hello": 2, "world": 1}
        assert driver.get_key_value_store("word-counts").get("hello") == 2
        produced = driver.produced_topic_names()
        app = driver.application_id
        assert produced == {"word-counts", f"{app}-word-counts-repartition",
                            f"{app}-word-counts-changelog"}


def test_sub_topologies_split_at_the_repartition_topic() -> None:
    subs = word_count_topology().sub_topologies()
    assert [s.source_topics for s in subs] == [["text-input"], ["word-counts-repartition"]]
    assert subs[1].nodes == ["word-counts-repartition-source", "KSTREAM-AGGREGATE-0000000003",
                             "KTABLE-TOSTREAM-0000000007", "KSTREAM-SINK-0000000008"]
    assert subs[1].stores == ["word-counts"]
