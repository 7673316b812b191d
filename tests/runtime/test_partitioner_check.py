"""A source topic written by librdkafka's default partitioner (confluent-kafka) gets one WARN
naming the topic and the fix; murmur2-partitioned input (aiokafka, `streams produce`) none."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from streams import KafkaStreams, Serdes, StreamsBuilder
from streams.kafka.batching import default_partition
from streams.runtime.partitioner_check import PartitionerCheck

from .kafka_io import create_topics, latest_by_key, produce, read_all

ROOT = Path(__file__).resolve().parents[2]
KEYS = [f"user-{i}" for i in range(40)]
CHECK_LOG = "streams.runtime.partitioner_check"


def count_topology():
    builder = StreamsBuilder()
    (builder.stream("clicks", key_serde=Serdes.string(), value_serde=Serdes.string())
        .group_by_key().count()
        .to_stream().to("click-counts", key_serde=Serdes.string(), value_serde=Serdes.long()))
    return builder.build()


@contextmanager
def counting_app(broker, tmp_path: Path) -> Iterator[Callable[[dict[str, int]], None]]:
    """The counting app, running; the function given waits until the counts are ``expected``."""
    streams = KafkaStreams(count_topology(), {
        "application.id": "partitioner-check", "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100})
    streams.start()

    def wait_for(expected: dict[str, int]) -> None:
        read_all(broker.bootstrap, "click-counts",
                 until=lambda rs: latest_by_key(rs) == expected, timeout=60)

    try:
        yield wait_for
    finally:
        assert streams.close(timeout=30)


def run_counts(broker, tmp_path: Path, expected: dict[str, int]) -> None:
    with counting_app(broker, tmp_path) as wait_for:
        wait_for(expected)


def warnings_of_check(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == CHECK_LOG and r.levelno == logging.WARNING]


def produce_with_confluent_kafka(bootstrap: str, records: list[tuple[str, str]]) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})  # its default partitioner
    for key, value in records:
        producer.produce("clicks", value=value.encode(), key=key.encode())
    assert producer.flush(30) == 0


def test_confluent_kafka_default_partitioner_gets_one_warning(broker, tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=CHECK_LOG)
    create_topics(broker.bootstrap, {"clicks": 4})
    first = [(k, "a") for k in KEYS] * 2
    produce_with_confluent_kafka(broker.bootstrap, first)
    with counting_app(broker, tmp_path) as wait_for:
        wait_for({k: 2 for k in KEYS})
        # more of the same while the app runs: still one warning
        produce_with_confluent_kafka(broker.bootstrap, [(k, "b") for k in KEYS])
        wait_for({k: 3 for k in KEYS})
    warned = warnings_of_check(caplog)
    assert len(warned) == 1, warned
    assert "'clicks'" in warned[0] and "partitioner=murmur2_random" in warned[0]


def test_murmur2_partitioned_input_gets_no_warning(broker, tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger=CHECK_LOG)
    create_topics(broker.bootstrap, {"clicks": 4})
    produce(broker.bootstrap, "clicks", [(k.encode(), b"a", 1_000) for k in KEYS])  # aiokafka
    lines = "".join(f"{k}:b\n" for k in KEYS)
    result = subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "produce", "--bootstrap-servers",
         broker.bootstrap, "clicks", "--key-separator", ":"],
        input=lines, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    # `streams produce` partitions keys with murmur2, as the Java producer
    for record in read_all(broker.bootstrap, "clicks", isolation="read_uncommitted"):
        assert record.partition == default_partition(record.key, 4), record
    run_counts(broker, tmp_path, {k: 2 for k in KEYS})
    assert warnings_of_check(caplog) == []


class _Rec:
    def __init__(self, key: bytes | None) -> None:
        self.key = key


def test_the_check_samples_and_stops_once_a_topic_is_found_wrong(caplog) -> None:
    caplog.set_level(logging.WARNING, logger=CHECK_LOG)
    check = PartitionerCheck({"in": 4, "single": 1}, ["in", "single"])
    assert "single" not in check.counts  # one partition: nothing can be wrong
    keys = [f"k{i}".encode() for i in range(200)]
    right = {p: [_Rec(k) for k in keys if default_partition(k, 4) == p] for p in range(4)}
    for p in range(4):
        check.observe("in", p, [_Rec(None), *right[p]])
    assert warnings_of_check(caplog) == [] and check.right["in"] > 0
    wrong = [_Rec(k) for k in keys if default_partition(k, 4) != 0]
    check.observe("in", 0, wrong)  # a later batch: its last record is looked at
    check.observe("in", 0, wrong)  # found wrong once: no longer checked
    warned = warnings_of_check(caplog)
    assert len(warned) == 1 and "'in'" in warned[0]
    assert "in" not in check.counts
