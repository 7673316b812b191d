"""A stream thread runs against its ThreadHost alone: settings and callbacks, no KafkaStreams.

The thread reports its state changes and every assignment's host map through the host's
callbacks and asks it whether SHUTDOWN_APPLICATION was requested when it joins the group (it
used to call the client's private methods, and imported the client to do so).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from streams import Serdes, StreamsBuilder
from streams.metrics import MetricsRegistry
from streams.runtime.config import StreamsConfig
from streams.runtime.thread import StreamThread, ThreadHost

from .kafka_io import create_topics, produce, read_all

S = Serdes.string()


def test_a_stream_thread_runs_on_its_host_callbacks(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"host-in": 2, "host-out": 2})
    builder = StreamsBuilder()
    builder.stream("host-in", key_serde=S, value_serde=S).map_values(str.upper).to(
        "host-out", key_serde=S, value_serde=S)
    config = StreamsConfig.from_mapping({
        "application.id": "thread-host", "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100})
    states: list[str] = []
    infos: list[Any] = []
    asked: list[bool] = []

    def shutdown_requested() -> bool:
        asked.append(True)
        return False

    host = ThreadHost(config, builder.build(), MetricsRegistry("kafka.streams"),
                      states.append, infos.append, shutdown_requested)
    thread = StreamThread(host)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    runner = threading.Thread(target=loop.run_until_complete, args=(thread.run(stop),))
    runner.start()
    try:
        produce(broker.bootstrap, "host-in", [(b"k", b"hello", 1), (b"j", b"world", 2)])
        out = read_all(broker.bootstrap, "host-out", isolation="read_uncommitted",
                       until=lambda records: len(records) >= 2, timeout=60)
    finally:
        loop.call_soon_threadsafe(stop.set)
        runner.join(60)
        loop.close()
    assert sorted(r.value for r in out) == [b"HELLO", b"WORLD"]
    assert states[0] == "REBALANCING" and "RUNNING" in states  # (repeats are the client's to drop)
    assert infos and sorted(str(t) for t in infos[-1].tasks) == ["0_0", "0_1"]
    assert asked, "the thread never asked its host about SHUTDOWN_APPLICATION"
