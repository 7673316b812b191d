"""Interactive queries are read-only and thread-safe.

A running app counts 20,000 keys (2 partitions) while another thread queries ``all()``,
``range()``, ``get()`` and ``approximate_num_entries()`` in a tight loop. A query must never
flush or otherwise write the store from the caller's thread: neither thread may raise, and
the final counts must all be right.
"""

from __future__ import annotations

import threading
import traceback

import pytest
from helpers import wait_until

from streams import KafkaStreams, Materialized, Serdes, StreamsBuilder
from streams.runtime import State

from .kafka_io import create_topics, produce

KEYS = 20_000
ROUNDS = 2


def counting_topology():
    s = Serdes.string()
    builder = StreamsBuilder()
    (builder.stream("iq-input", key_serde=s, value_serde=s).group_by_key()
     .count(Materialized("iq-counts")))
    return builder.build()


class Querier(threading.Thread):
    """Queries the store until stopped; keeps every exception it meets."""

    def __init__(self, app: KafkaStreams) -> None:
        super().__init__(daemon=True, name="querier")
        self.app = app
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.rounds = 0

    def run(self) -> None:
        view = self.app.store("iq-counts")
        while not self.stop.is_set():
            try:
                for key, count in view.all():
                    assert count is None or 1 <= count <= ROUNDS, (key, count)
                list(view.range("k01000", "k01999"))
                view.get("k00042")
                view.approximate_num_entries()
                self.rounds += 1
            except Exception:
                self.errors.append(traceback.format_exc())
                if len(self.errors) > 20:
                    return


@pytest.mark.parametrize("cache_max_bytes", [0, 10 * 1024 * 1024])
def test_queries_while_processing_neither_fail_nor_lose_writes(broker, tmp_path,
                                                               cache_max_bytes) -> None:
    create_topics(broker.bootstrap, {"iq-input": 2})
    app = KafkaStreams(counting_topology(), {
        "application.id": "iq-app", "bootstrap.servers": broker.bootstrap,
        "commit.interval.ms": 100, "state.dir": str(tmp_path / "state"),
        "statestore.cache.max.bytes": cache_max_bytes,
    })
    app.start()
    querier = Querier(app)
    try:
        assert app.wait_for_state(State.RUNNING, timeout=60)
        querier.start()
        keys = [f"k{i:05d}" for i in range(KEYS)]
        for round_ in range(ROUNDS):
            produce(broker.bootstrap, "iq-input",
                    [(k.encode(), b"x", 1_000 * round_ + i) for i, k in enumerate(keys)])
        expected = dict.fromkeys(keys, ROUNDS)
        view = app.store("iq-counts")
        wait_until(lambda: querier.errors or app.state is not State.RUNNING
                   or dict(view.all()) == expected,
                   timeout=120, interval=0.2, message="every key counted twice")
        final = dict(view.all())
        assert querier.rounds > 0
    finally:
        querier.stop.set()
        if querier.is_alive():
            querier.join(30)
        app.close(timeout=30)
    assert querier.errors == [], querier.errors[0]
    assert app.error is None, repr(app.error)
    right = sum(1 for k, n in expected.items() if final.get(k) == n)
    assert right == KEYS, f"{right} of {KEYS} keys right"
