"""A word-count application file for `streams run` / `streams describe` tests."""

from streams import Materialized, Serdes, StreamsBuilder

config = {"application.id": "cli-wordcount", "commit.interval.ms": 100}


def build_topology():
    builder = StreamsBuilder()
    lines = builder.stream("cli-text", key_serde=Serdes.string(), value_serde=Serdes.string())
    (lines.flat_map_values(lambda line: line.lower().split())
        .group_by(lambda key, word: word)
        .count(Materialized("cli-counts"))
        .to_stream()
        .to("cli-word-counts", key_serde=Serdes.string(), value_serde=Serdes.long()))
    return builder.build()
