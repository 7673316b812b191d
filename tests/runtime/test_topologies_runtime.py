"""Stream-table join, windowed count and co-partitioning checks on the embedded broker."""

from __future__ import annotations

from helpers import wait_until

from streams import KafkaStreams, Serdes, StreamsBuilder, TimeWindows
from streams.runtime import State

from .kafka_io import create_topics, produce, read_all


def _config(broker, tmp_path, app_id, **extra):
    return {"application.id": app_id, "bootstrap.servers": broker.bootstrap,
            "commit.interval.ms": 100, "state.dir": str(tmp_path / app_id), **extra}


def join_topology():
    builder = StreamsBuilder()
    s = Serdes.string()
    users = builder.table("users", key_serde=s, value_serde=s)
    views = builder.stream("page-views", key_serde=s, value_serde=s)
    views.join(users, lambda page, region: f"{page}@{region}").to(
        "enriched-views", key_serde=s, value_serde=s)
    return builder.build()


def test_stream_table_join_end_to_end(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"users": 2, "page-views": 2})
    users = {f"user{i}": ("eu" if i % 2 else "us") for i in range(10)}
    produce(broker.bootstrap, "users",
            [(u.encode(), r.encode(), 1_000 + i) for i, (u, r) in enumerate(users.items())])
    # A view of an unknown user has no match (inner join) and is dropped.
    views = [(f"user{i % 10}", f"/page{i}") for i in range(30)] + [("stranger", "/x")]
    produce(broker.bootstrap, "page-views",
            [(u.encode(), p.encode(), 10_000 + i) for i, (u, p) in enumerate(views)])
    streams = KafkaStreams(join_topology(), _config(broker, tmp_path, "join-app",
                                                    **{"processing.guarantee":
                                                       "exactly_once_v2"}))
    streams.start()
    try:
        records = read_all(broker.bootstrap, "enriched-views", until=lambda rs: len(rs) >= 30)
        got = sorted((r.key.decode(), r.value.decode()) for r in records)
        assert got == sorted((u, f"{p}@{users[u]}") for u, p in views if u in users)
        assert streams.state is State.RUNNING
    finally:
        assert streams.close(timeout=30)


def test_copartitioning_mismatch_fails_clearly(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"users": 2, "page-views": 3})
    streams = KafkaStreams(join_topology(), _config(broker, tmp_path, "bad-join"))
    streams.start()
    assert streams.wait_for_state(State.ERROR, timeout=30)
    assert "co-partitioned" in str(streams.error)
    assert "page-views=3" in str(streams.error) and "users=2" in str(streams.error)
    streams.close(timeout=10)


def test_missing_source_topic_fails_clearly(broker, tmp_path) -> None:
    streams = KafkaStreams(join_topology(), _config(broker, tmp_path, "no-topics"))
    streams.start()
    assert streams.wait_for_state(State.ERROR, timeout=30)
    assert "do not exist" in str(streams.error)


def test_tumbling_window_count_end_to_end(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"clicks": 2})
    s = Serdes.string()
    windowed = Serdes.windowed(s, 10_000)
    builder = StreamsBuilder()
    (builder.stream("clicks", key_serde=s, value_serde=s)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10_000))
        .count()
        .to_stream()
        .to("clicks-per-window", key_serde=windowed, value_serde=Serdes.long()))
    clicks = [("alice", 1_000), ("bob", 2_000), ("alice", 9_000), ("alice", 12_000),
              ("bob", 15_000), ("bob", 19_999), ("alice", 25_000)]
    produce(broker.bootstrap, "clicks", [(k.encode(), b"c", ts) for k, ts in clicks])
    expected = {("alice", 0): 2, ("bob", 0): 1, ("alice", 10_000): 1, ("bob", 10_000): 2,
                ("alice", 20_000): 1}
    streams = KafkaStreams(builder.build(), _config(broker, tmp_path, "windows"))
    streams.start()
    try:
        def final(records) -> dict:
            result = {}
            for r in records:
                key = windowed.deserialize("clicks-per-window", r.key)
                result[(key.key, key.window.start)] = int.from_bytes(r.value, "big")
            return result

        # The record cache may fold several updates of a window into one: wait for the
        # final counts, not for one record per click.
        records = read_all(broker.bootstrap, "clicks-per-window",
                           until=lambda rs: final(rs) == expected)
        assert final(records) == expected
        assert len(records) <= len(clicks)
        store_counts = wait_until(
            lambda: sorted((w.key, w.window.start, c)
                           for w, c in streams.store(_store_name(streams)).fetch_all(0, 30_000)),
            message="window store contents")
        # Reads skip windows that start at or before observed - retention (size + grace), as
        # Kafka's fetchAll does: alice's task saw window 20,000, so alice@10,000 has expired;
        # bob's saw 10,000, so bob@10,000 is there. The newest ones have their final counts.
        assert set(store_counts) <= {(k, s_, c) for (k, s_), c in expected.items()}
        assert {("alice", 20_000, 1), ("bob", 10_000, 2)} <= set(store_counts)
        assert ("alice", 10_000, 1) not in set(store_counts)
    finally:
        assert streams.close(timeout=30)


def _store_name(streams: KafkaStreams) -> str:
    return next(iter(streams.topology.stores))
