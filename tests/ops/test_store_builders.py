"""Stores.window_store_builder / session_store_builder with persistent and in-memory
suppliers, used from the Processor API: records go in, the driver's store reads them back."""

from __future__ import annotations

import datetime as dt

import pytest

from streams import Processor, Serdes, Stores, Topology, Window, Windowed
from streams.testing import TopologyTestDriver

S = Serdes.string()


class Recorder(Processor):
    """Puts each record into the window store (its 10 s window) and a session per key."""

    def init(self, context) -> None:
        super().init(context)
        self.windows = context.get_state_store("clicks-by-window")
        self.sessions = context.get_state_store("click-sessions")

    def process(self, record) -> None:
        start = record.timestamp - record.timestamp % 10_000
        current = self.windows.fetch(record.key, start) or 0
        self.windows.put(record.key, current + 1, start)
        self.sessions.put(Windowed(record.key, Window(record.timestamp, record.timestamp)),
                          record.value)


@pytest.mark.parametrize("persistent", [True, False])
def test_window_and_session_store_builders(persistent: bool, tmp_path) -> None:
    if persistent:
        window = Stores.persistent_window_store("clicks-by-window", dt.timedelta(hours=1),
                                                10_000)
        session = Stores.persistent_session_store("click-sessions", 3_600_000)
    else:
        window = Stores.in_memory_window_store("clicks-by-window", 3_600_000,
                                               dt.timedelta(seconds=10))
        session = Stores.in_memory_session_store("click-sessions", dt.timedelta(hours=1))
    topology = Topology()
    topology.add_source("src", "clicks", key_serde=S, value_serde=S)
    topology.add_processor("rec", Recorder, "src")
    topology.add_state_store(Stores.window_store_builder(window, S, Serdes.long()), "rec")
    topology.add_state_store(Stores.session_store_builder(session, S, S), "rec")
    with TopologyTestDriver(topology, config={"state.dir": str(tmp_path)}) as driver:
        clicks = driver.create_input_topic("clicks", S, S)
        for ts in (1_000, 2_000, 12_000):
            clicks.pipe_input("alice", f"page@{ts}", timestamp=ts)
        store = driver.get_window_store("clicks-by-window")
        assert list(store.fetch("alice", 0, 20_000)) == [(0, 2), (10_000, 1)]
        sessions = driver.get_session_store("click-sessions")
        assert [(w.window.start, v) for w, v in sessions.fetch("alice")] == \
            [(1_000, "page@1000"), (2_000, "page@2000"), (12_000, "page@12000")]


def test_store_builders_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="at least the window size"):
        Stores.persistent_window_store("w", 1_000, 10_000)
    with pytest.raises(TypeError, match="window_store_builder takes a window store supplier"):
        Stores.window_store_builder(Stores.in_memory_session_store("s", 1_000))
    with pytest.raises(ValueError, match="retention_ms must be >= 0"):
        Stores.in_memory_session_store("s", -1)
