"""The registry, its Prometheus exposition and the HTTP endpoint, without any component."""

from __future__ import annotations

import asyncio
import math

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams.metrics import Histogram, MetricName, MetricsRegistry, RecordingLevel, Sample
from streams.metrics.http import MetricsServer, parse_listener
from streams.metrics.prometheus import exposition
from streams.metrics.registry import WindowedStat


class Thread:
    processed = 0


def parse(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_registry_reads_lazily_and_exports_kafka_names() -> None:
    registry = MetricsRegistry("kafka.streams")
    thread = Thread()
    registry.counter("stream-thread-metrics", "process-total", lambda: thread.processed,
                     tags={"thread-id": "app-StreamThread-1"})
    hist = Histogram((0.01, 0.1))
    registry.histogram("requestmetrics", "totaltime_seconds", hist, tags={"request": "Produce"},
                       domain="kafka.network")
    registry.add_collector(lambda: [Sample("kafka", "consumergroup", "lag", "gauge",
                                           {"group": "g", "topic": "t", "partition": 0}, 7)])
    thread.processed = 42  # a plain attribute, read only when asked
    hist.observe(0.05)
    hist.observe(3.0)
    values = registry.metrics()
    assert values[MetricName.of("stream-thread-metrics", "process-total",
                                {"thread-id": "app-StreamThread-1"})] == 42
    assert values[MetricName.of("consumergroup", "lag",
                                {"group": "g", "topic": "t", "partition": 0})] == 7
    scraped = parse(exposition(registry))
    assert scraped[("kafka_streams_stream_thread_metrics_process_total",
                    (("thread_id", "app-StreamThread-1"),))] == 42
    assert scraped[("kafka_consumergroup_lag",
                    (("group", "g"), ("partition", "0"), ("topic", "t")))] == 7
    bucket = "kafka_network_requestmetrics_totaltime_seconds_bucket"
    assert scraped[(bucket, (("le", "0.01"), ("request", "Produce")))] == 0
    assert scraped[(bucket, (("le", "0.1"), ("request", "Produce")))] == 1
    assert scraped[(bucket, (("le", "+Inf"), ("request", "Produce")))] == 2
    assert registry.remove_tagged(thread_id="app-StreamThread-1") == 1


def test_windowed_rate_and_average() -> None:
    now = [0.0]
    counts = {"n": 0, "t": 0.0}
    stat = WindowedStat(lambda: counts["n"], lambda: counts["t"], window_s=30,
                        clock=lambda: now[0])
    assert math.isnan(stat.avg())
    counts.update(n=10, t=50.0)
    now[0] = 5.0
    assert stat.rate() == pytest.approx(2.0)
    assert stat.avg() == pytest.approx(5.0)


def test_recording_level_and_listener_errors() -> None:
    assert RecordingLevel.parse("debug") is RecordingLevel.DEBUG
    assert not MetricsRegistry().should_record(RecordingLevel.DEBUG)
    with pytest.raises(ValueError, match="metrics.recording.level"):
        RecordingLevel.parse("LOUD")
    assert parse_listener("http://127.0.0.1:9404") == ("127.0.0.1", 9404)
    for bad in ("https://h:1", "http://h", "h:x", "http://h:1/metrics"):
        with pytest.raises(ValueError, match="metrics.listener"):
            parse_listener(bad)


def test_http_endpoint_serves_metrics_and_health() -> None:
    async def main() -> None:
        registry = MetricsRegistry("kafka.server")
        registry.counter("brokertopicmetrics", "messagesin_total", lambda: 3,
                         tags={"topic": "t"})
        state = {"ok": False}
        server = MetricsServer("http://127.0.0.1:0", registry,
                               lambda: (state["ok"], {"status": "up" if state["ok"] else "down"}))
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(server.url + "/metrics") as r:
                    assert r.status == 200
                    assert "text/plain" in r.headers["Content-Type"]
                    text = await r.read()
                assert parse(text)[("kafka_server_brokertopicmetrics_messagesin_total",
                                    (("topic", "t"),))] == 3
                async with session.get(server.url + "/health") as r:
                    assert r.status == 503
                    assert (await r.json()) == {"status": "down"}
                state["ok"] = True
                async with session.get(server.url + "/health") as r:
                    assert r.status == 200
        finally:
            await server.stop()

    asyncio.run(main())
