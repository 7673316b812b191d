"""topology.optimization=all: repartition topics merged where Kafka Streams merges them, and
source tables restored from their input topics (reuse.ktable.source.topics).

The describe() of every case in optimized_cases.py is compared, text for text, with what Kafka
Streams 4.4 prints for the same program (java/OptimizedTopologies.java, compiled against the
reference jars; without java or the jars that one test skips, naming why). The merged topology
gives the same results as the plain one, in the TopologyTestDriver and on a broker, where the
application creates one repartition topic instead of two.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest
from helpers import RECENT_TS, create_topics, list_topics, reference_unavailable, wait_until

from streams import KafkaStreams, Serdes, StreamsBuilder
from streams.runtime import State
from streams.testing import TopologyTestDriver
from streams.topology.topology import TopologyError

from .optimized_cases import CASES, case1, case7
from .procs import ROOT, produce

SOURCE = ROOT / "tests" / "ops" / "java" / "OptimizedTopologies.java"
S = Serdes.string()


def kafka_descriptions() -> dict[str, str]:
    """``{"case1 all": describe text, ...}`` from Kafka Streams itself."""
    reason = reference_unavailable()
    if reason:
        pytest.skip(reason)
    from reference import kafka

    build = kafka.CACHE / "ops-optimized"
    marker = build / ".source-sha256"
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    if not (marker.exists() and marker.read_text() == digest):
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        subprocess.run(["javac", "-nowarn", "-d", str(build), "-cp", f"{kafka.LIBS}/*",
                        str(SOURCE)], check=True, capture_output=True, timeout=300)
        marker.write_text(digest)
    out = subprocess.run(["java", *kafka.JAVA_OPTS, "-cp", f"{build}:{kafka.LIBS}/*",
                          "OptimizedTopologies"], check=True, capture_output=True, text=True,
                         timeout=300).stdout
    blocks = {}
    for block in out.split("=== ")[1:]:
        head, body = block.split("\n", 1)
        blocks[head] = body.strip()
    return blocks


def describe(case, optimization: str) -> str:
    builder = StreamsBuilder()
    case(builder)
    topology = builder.build({"application.id": "app", "topology.optimization": optimization})
    return str(topology.describe()).strip()


def test_describe_matches_kafka_streams_with_and_without_optimization() -> None:
    kafka = kafka_descriptions()
    assert len(kafka) == 2 * len(CASES)
    for name, case in CASES.items():
        for optimization in ("none", "all"):
            assert describe(case, optimization) == kafka[f"{name} {optimization}"], \
                (name, optimization)


def test_merged_topology_gives_the_same_results() -> None:
    def run(case, optimization: str) -> tuple[dict, dict]:
        builder = StreamsBuilder()
        case(builder)
        topology = builder.build({"application.id": "app", "topology.optimization": optimization})
        with TopologyTestDriver(topology, config={"default.key.serde": S,
                                                  "default.value.serde": S}) as driver:
            if "t" in topology._topic_sources:  # noqa: SLF001 - case7's table
                table = driver.create_input_topic("t", S, S)
                for word in ("a", "b"):
                    table.pipe_input(word, word.upper(), timestamp=1)
            inp = driver.create_input_topic("in", S, S)
            for i, (key, value) in enumerate([("1", "a"), ("2", "b"), ("3", "a"), ("4", "c")]):
                inp.pipe_input(key, value, timestamp=10 + i)
            out1 = driver.create_output_topic("out1", S, S if case is case7 else Serdes.long())
            out2 = driver.create_output_topic("out2", S, Serdes.string() if case is case1
                                              else Serdes.long())
            return out1.read_key_values_to_map(), out2.read_key_values_to_map()

    for case in (case1, case7):
        assert run(case, "all") == run(case, "none")
    assert run(case1, "all") == ({"a": 2, "b": 1, "c": 1}, {"a": "13", "b": "2", "c": "4"})


def test_bad_or_unsupported_setting_is_named() -> None:
    builder = StreamsBuilder()
    case1(builder)
    with pytest.raises(TopologyError, match="topology.optimization: unknown optimization"):
        builder.build({"topology.optimization": "fast"})
    with pytest.raises(TopologyError, match="single.store.self.join is not supported"):
        builder.build({"topology.optimization": "single.store.self.join"})
    with pytest.raises(ValueError, match="topology.optimization"):
        KafkaStreams(builder.build(), {"application.id": "x", "topology.optimization": "fast"})


def test_one_repartition_topic_on_a_broker(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 2})
    config = {"application.id": "opt-app", "bootstrap.servers": broker.bootstrap,
              "state.dir": str(tmp_path), "commit.interval.ms": 100,
              "default.key.serde": "string", "default.value.serde": "string",
              "topology.optimization": "all"}
    builder = StreamsBuilder()
    case1(builder)
    app = KafkaStreams(builder.build(config), config)
    app.start()
    try:
        assert app.wait_for_state(State.RUNNING, timeout=60)
        produce(broker.bootstrap, "in", [(b"1", b"a", RECENT_TS), (b"2", b"b", RECENT_TS),
                                         (b"3", b"a", RECENT_TS)])
        store = "KSTREAM-AGGREGATE-STATE-STORE-0000000002"
        wait_until(lambda: app.store(store).get("a") == 2 and app.store(store).get("b") == 1,
                   timeout=60, message="both aggregations fed by the one repartition topic")
        reduced = "KSTREAM-REDUCE-STATE-STORE-0000000009"
        wait_until(lambda: app.store(reduced).get("a") == "13", timeout=60,
                   message="the reduce fed by the same topic")
        assert app.state is State.RUNNING
        repartition = [t for t in list_topics(broker.bootstrap) if t.endswith("-repartition")]
        assert repartition == [f"opt-app-{store}-repartition"]
    finally:
        assert app.close(timeout=30)


def test_source_table_restores_from_its_input_topic(broker, tmp_path) -> None:
    """No changelog topic for the source table; a new instance with an empty state directory
    restores the table from the input topic, but only up to the committed offset: records
    produced while no instance ran are processed again and find the old values (the count
    per value moves from x to z, which it would not if the restore had read them)."""
    create_topics(broker.bootstrap, {"tin": 1})

    def start(state: str) -> KafkaStreams:
        config = {"application.id": "reuse-app", "bootstrap.servers": broker.bootstrap,
                  "state.dir": str(tmp_path / state), "commit.interval.ms": 100,
                  "topology.optimization": "all"}
        builder = StreamsBuilder()
        table = builder.table("tin", key_serde=S, value_serde=S, materialized="tstore")
        table.group_by(lambda k, v: (v, k), key_serde=S, value_serde=S).count("per-value")
        app = KafkaStreams(builder.build(config), config)
        app.start()
        assert app.wait_for_state(State.RUNNING, timeout=60)
        return app

    def counts(app: KafkaStreams) -> dict:
        return {v: app.store("per-value").get(v) for v in ("x", "y", "z")}

    first = start("a")
    try:
        produce(broker.bootstrap, "tin", [(b"k1", b"x", RECENT_TS), (b"k2", b"x", RECENT_TS),
                                          (b"k3", b"y", RECENT_TS)])
        wait_until(lambda: counts(first) == {"x": 2, "y": 1, "z": None}, timeout=60,
                   message="the first instance's counts")
    finally:
        assert first.close(timeout=30)

    names = list_topics(broker.bootstrap)
    assert "reuse-app-tstore-changelog" not in names
    assert "reuse-app-per-value-changelog" in names

    produce(broker.bootstrap, "tin", [(b"k2", b"z", RECENT_TS + 1)])  # while nothing runs
    second = start("b")  # an empty state directory: everything restored
    try:
        wait_until(lambda: counts(second) == {"x": 1, "y": 1, "z": 1}, timeout=60,
                   message="k2 moved from x to z after the restore")
        assert second.store("tstore").get("k1") == "x"
        assert second.store("tstore").get("k2") == "z"
    finally:
        assert second.close(timeout=30)
