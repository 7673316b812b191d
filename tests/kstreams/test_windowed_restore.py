"""A windowed aggregation restarted on a restored store starts its stream time from nothing,
as Kafka's do (KStreamWindowAggregate / KStreamSessionWindowAggregate:
``observedStreamTime = NO_TIMESTAMP`` per processor instance); only the store keeps the
stream time it restored, and hides what is older than its retention.

Under at_least_once the input is reprocessed from the last committed offsets after a crash,
while the restored store (its changelog runs ahead) may have got much further. Starting the
aggregation from the store's stream time dropped replayed records as late, although their
effect had never reached the output (soak seed 4250: session windows, at_least_once, broker
outage: 29 sessions missing). Kafka processes them again: a window or session the store
already hides is rebuilt from the replayed records alone and forwarded (an at-least-once
duplicate); one it still sees is updated again (an over-count).
"""

from __future__ import annotations

import pytest

from streams import Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows
from streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
B = Serdes.bytes()
APP = "windowed-restore"
GAP = 10


def counts_topology():
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 0)).count(Materialized("counts"))
     .to_stream().to("out", key_serde=Serdes.windowed(S, 10), value_serde=Serdes.long()))
    return builder.build()


def sessions_topology():
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=S, value_serde=S).group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(GAP))
     .count(Materialized("sessions"))
     .to_stream().to("out", key_serde=Serdes.session_windowed(S), value_serde=Serdes.long()))
    return builder.build()


def _config(tmp_path, name: str, cache: int) -> dict[str, object]:
    return {"application.id": APP, "state.dir": str(tmp_path / name),
            "statestore.cache.max.bytes": cache}


def _run_first(topology, store: str, timestamps: list[int], tmp_path, cache: int
               ) -> list[TestRecord]:
    """Process ``timestamps`` for key "a"; return the store's changelog."""
    with TopologyTestDriver(topology, _config(tmp_path, "first", cache)) as first:
        inp = first.create_input_topic("in", S, S)
        for ts in timestamps:
            inp.pipe_input("a", "v", timestamp=ts)
        first.advance_wall_clock_time(60_000)  # a commit: the cache flushes to the changelog
        return first.create_output_topic(f"{APP}-{store}-changelog", B, B).read_records_to_list()


def _restored(topology, store: str, records: list[TestRecord], tmp_path,
              cache: int) -> TopologyTestDriver:
    driver = TopologyTestDriver(topology, _config(tmp_path, "second", cache))
    restored = driver.get_state_store(store)
    for record in records:
        restored.restore(record.key, record.value, record.timestamp)
    restored.flush()
    return driver


@pytest.mark.parametrize("cache", [0, 10 * 1024 * 1024])
def test_replayed_records_of_windows_the_restored_store_expired_are_counted_again(
        tmp_path, cache: int) -> None:
    logged = _run_first(counts_topology(), "counts", [1, 2, 3, 14, 25, 36], tmp_path, cache)
    with _restored(counts_topology(), "counts", logged, tmp_path, cache) as second:
        out = second.create_output_topic("out", Serdes.windowed(S, 10), Serdes.long())
        inp = second.create_input_topic("in", S, S)
        inp.pipe_input("a", "v", timestamp=2)   # replayed: the store hides [0,10)
        inp.pipe_input("a", "v", timestamp=3)
        inp.pipe_input("a", "v", timestamp=37)  # the open window [30,40) still counts on
        second.advance_wall_clock_time(60_000)
        got = [(r.key.window.start, r.value) for r in out.read_records_to_list()]
        assert second.get_state_store("counts").fetch("a", 30) == 2
    if cache:  # Kafka's CachingWindowStore: the replay accumulates in the cache (the driver
        assert got == [(0, 1), (0, 2), (30, 2)]  # flushes it after every record)
    else:  # no cache: every replayed record rebuilds the window anew
        assert got == [(0, 1), (0, 1), (30, 2)]


@pytest.mark.parametrize("cache", [0, 10 * 1024 * 1024])
def test_replayed_records_of_sessions_the_restored_store_expired_are_counted_again(
        tmp_path, cache: int) -> None:
    # sessions [0,4] (3 records) and [100,101] (2); the store's stream time is 101
    logged = _run_first(sessions_topology(), "sessions", [0, 2, 4, 100, 101], tmp_path, cache)
    with _restored(sessions_topology(), "sessions", logged, tmp_path, cache) as second:
        out = second.create_output_topic("out", Serdes.session_windowed(S), Serdes.long())
        inp = second.create_input_topic("in", S, S)
        for ts in (2, 4, 100, 101, 105):  # replayed from the middle of [0,4], then new input
            inp.pipe_input("a", "v", timestamp=ts)
        second.advance_wall_clock_time(60_000)
        got = [((r.key.window.start, r.key.window.end), r.value)
               for r in out.read_records_to_list()]
    final: dict[tuple[int, int], int | None] = {}
    for window, value in got:
        final[window] = value
    # [0,4] is hidden from the replay: its records 2 and 4 are counted again in sessions of
    # their own (never dropped); [100,101] is still seen and counts its replayed records again.
    if cache:  # merged in the cache (Kafka's CachingSessionStore; the driver flushes it
        # after every record): [2,2] stays visible there, though the store skipped it
        assert got == [((2, 2), 1), ((2, 4), 2), ((100, 101), 3), ((100, 101), 4),
                       ((100, 101), None), ((100, 105), 5)]
    else:  # the store hides what it just wrote too: one session per replayed record
        assert got == [((2, 2), 1), ((4, 4), 1),
                       ((100, 101), None), ((100, 101), 3), ((100, 101), None),
                       ((100, 101), 4), ((100, 101), None), ((100, 105), 5)]
    assert final[(100, 105)] == 5
