"""Every metric the Grafana dashboard queries is exported by a running broker, app and worker."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from helpers import EmbeddedBroker, create_topics, free_port, wait_until
from runtime.kafka_io import produce

from streams import KafkaStreams, Serdes, StreamsBuilder

from .scrape import scrape, value

sys.path.insert(0, str(Path(__file__).parent.parent / "connect"))
from worker_helpers import standalone, wait_running  # noqa: E402

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "streams-dashboard.json"


def dashboard_metrics() -> set[str]:
    names: set[str] = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            names.update(re.findall(r"\bkafka_[a-z0-9_]+", target["expr"]))
    return names


def test_dashboard_queries_only_exported_metrics(tmp_path) -> None:
    wanted = dashboard_metrics()
    assert len(wanted) > 20
    broker = EmbeddedBroker(tmp_path / "b", metrics_listener="http://127.0.0.1:0").start()
    try:
        create_topics(broker.bootstrap, {"in": 1, "out": 1})
        produce(broker.bootstrap, "in", [(b"k", b"v", 1_000)])
        builder = StreamsBuilder()
        builder.stream("in", key_serde=Serdes.string(), value_serde=Serdes.string()).to("out")
        app_url = f"http://127.0.0.1:{free_port()}"
        streams = KafkaStreams(builder.build(), {
            "application.id": "dash", "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100,
            "metrics.listener": app_url})
        streams.start()
        source_file = tmp_path / "in.txt"
        source_file.write_text("a\nb\n")
        worker = standalone(tmp_path, broker.bootstrap, **{
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        try:
            worker.put_connector({"name": "src", "connector.class": "FileStreamSource",
                                  "file": str(source_file), "topic": "lines"})
            worker.put_connector({"name": "snk", "connector.class": "FileStreamSink",
                                  "file": str(tmp_path / "out.txt"), "topics": "lines"})
            wait_running(worker.url, "snk", 1)
            wait_until(lambda: value(scrape(app_url),
                                     "kafka_streams_stream_thread_metrics_process_total") == 1)
            wait_until(lambda: value(scrape(broker.broker.metrics.url),
                                     "kafka_consumergroup_lag", group="dash") == 0)
            exported = set()
            for url in (broker.broker.metrics.url, app_url, worker.url):
                exported.update(scrape(url))
            assert not wanted - exported, sorted(wanted - exported)
        finally:
            worker.stop()
            streams.close(30)
    finally:
        broker.stop()
