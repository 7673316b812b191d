"""A streams app on the embedded broker, scraped: the values match what it processed."""

from __future__ import annotations

import math

from helpers import free_port, wait_until
from runtime.kafka_io import create_topics, produce, read_all

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder
from streams.metrics import MetricName

from .scrape import health, scrape, value

S, L = Serdes.string(), Serdes.long()
THREAD = "kafka_streams_stream_thread_metrics_"


def counting():
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=L)
        .group_by_key()
        .count(Materialized("counts"))
        .to_stream().to("out", key_serde=S, value_serde=L))
    return builder.build()


def test_streams_app_metrics_match_what_it_processed(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 2, "out": 1})
    good = [(f"k{i % 5}".encode(), (i).to_bytes(8, "big"), 1_000 + i) for i in range(40)]
    poison = [(b"k0", b"\x01\x02", 5_000)]  # not 8 bytes: the long serde fails on it
    produce(broker.bootstrap, "in", good[:20] + poison + good[20:], partition=0)
    url = f"http://127.0.0.1:{free_port()}"
    streams = KafkaStreams(counting(), {
        "application.id": "metered", "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100,
        "default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
        "statestore.cache.max.bytes": 0,  # one output per record
        "metrics.listener": url, "metrics.recording.level": "DEBUG"})
    streams.start()
    try:
        wait_until(lambda: streams.state.value == "RUNNING", timeout=60)
        read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 40)

        def processed_all() -> bool:
            m = scrape(url)
            return value(m, THREAD + "process_total") == 41 and \
                value(m, THREAD + "commit_total") >= 1
        wait_until(processed_all, timeout=30)
        m = scrape(url)
        thread_id = dict(next(iter(m[THREAD + "process_total"])))["thread_id"]
        assert thread_id.endswith("StreamThread-1")
        assert value(m, THREAD + "poll_total") >= 1
        assert value(m, THREAD + "process_rate") > 0
        assert value(m, THREAD + "process_latency_avg") > 0
        assert value(m, THREAD + "commit_latency_avg") >= 0
        tasks = "kafka_streams_stream_task_metrics_"
        assert value(m, tasks + "dropped_records_total", task_id="0_0") == 1
        assert value(m, tasks + "dropped_records_total", task_id="0_1") == 0
        assert value(m, tasks + "record_e2e_latency_max", task_id="0_0") > 0
        # DEBUG: the Metered layer timed every put of the count store (one per good record;
        # get/put of the timestamped count)
        state = "kafka_streams_stream_state_metrics_"
        assert value(m, state + "put_total", task_id="0_0", store="counts") == 40
        assert value(m, state + "put_latency_avg", task_id="0_0", store="counts") > 0
        assert value(m, state + "get_total", task_id="0_0", store="counts") >= 40
        # DEBUG: records per processor node (the poison record never reached the source node)
        nodes = "kafka_streams_stream_processor_node_metrics_process_total"
        for node in ("KSTREAM-SOURCE-0000000000", "KSTREAM-AGGREGATE-0000000001",
                     "KTABLE-TOSTREAM-0000000002", "KSTREAM-SINK-0000000003"):
            assert value(m, nodes, task_id="0_0", processor_node_id=node) == 40, node
        assert value(m, nodes, task_id="0_1", processor_node_id="KSTREAM-SOURCE-0000000000") \
            == 0
        # everything consumed: the consumer is at the end of both partitions
        lag_max = value(m, "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max")
        assert lag_max == 0
        status, body = health(url)
        assert status == 200 and body["state"] == "RUNNING"
        state = "kafka_streams_stream_metrics_state"
        assert value(m, state, state="RUNNING", application_id="metered") == 1
        assert value(m, state, state="REBALANCING", application_id="metered") == 0
        # KafkaStreams.metrics(): the same values keyed like Kafka's MetricName
        values = streams.metrics()
        assert values[MetricName.of("stream-thread-metrics", "process-total",
                                    {"thread-id": thread_id})] == 41
        assert values[MetricName.of("stream-task-metrics", "dropped-records-total",
                                    {"thread-id": thread_id, "task-id": "0_0"})] == 1
        assert not math.isnan(values[MetricName.of(
            "stream-thread-metrics", "process-latency-avg", {"thread-id": thread_id})])
    finally:
        streams.close(30)


def test_info_level_leaves_stores_unwrapped(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"in": 1, "out": 1})
    produce(broker.bootstrap, "in", [(b"a", (1).to_bytes(8, "big"), 1_000)])
    streams = KafkaStreams(counting(), {
        "application.id": "unmetered", "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100})
    streams.start()
    try:
        wait_until(lambda: streams.state.value == "RUNNING", timeout=60)
        read_all(broker.bootstrap, "out", until=lambda rs: len(rs) >= 1)
        store = streams.local_stores("counts")[0]
        assert type(store).__name__ != "MeteredStore"
        names = {n.group for n in streams.metrics()}
        assert "stream-state-metrics" not in names and "stream-thread-metrics" in names
    finally:
        streams.close(30)
