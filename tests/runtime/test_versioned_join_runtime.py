"""A stream-table join against a versioned table with a grace period (KIP-889/914/923), on
4 partitions and 2 processes, with one process stopped while stream records wait in the grace
buffers: the other restores its versioned stores and buffers from their changelogs and the
output is exactly the oracle's, every order priced as of its own time.

Timeline (event time, T = a recent day): prices p0..p39 get versions at T, T+1s .. T+4s, sent
out of order; batch 1 (200 orders between T and T+5s) waits in the buffers until one flush
order per partition at T+10s releases it. Batch 2 (200 orders at T+20s..T+21s) is followed by
late prices at T+19.5s for p0..p19, which the buffered orders must see; then instance b stops,
a takes its tasks over, and a flush at T+40s releases batch 2.
"""

from __future__ import annotations

from pathlib import Path

from helpers import RECENT_TS, wait_until

from .app_process import AppProcess
from .kafka_io import create_topics, produce, read_all

SCRIPT = Path(__file__).with_name("versioned_join_app.py")
APP_ID = "versioned-join-app"
PRICES_CHANGELOG = f"{APP_ID}-prices-store-changelog"
BUFFER_CHANGELOG = f"{APP_ID}-KSTREAM-JOIN-0000000003-Buffer-changelog"
PARTITIONS = 4
PRODUCTS = [f"p{i}" for i in range(40)]
T = RECENT_TS


def start_app(bootstrap: str, state_dir: Path, log: Path) -> AppProcess:
    """One instance of versioned_join_app.py in its own process."""
    return AppProcess(SCRIPT, [bootstrap, str(state_dir)], log, state_dir=state_dir)


def encode(records: list[tuple[str, str, int]]) -> list[tuple[bytes, bytes, int]]:
    return [(k.encode(), v.encode(), ts) for k, v, ts in records]


def price_as_of(versions: dict[str, list[tuple[int, str]]], product: str, ts: int) -> str:
    return max((v for v in versions[product] if v[0] <= ts), key=lambda v: v[0])[1]


def flush(bootstrap: str, ts: int) -> None:
    """One order per partition for a product without a price: it joins nothing, but moves
    every task's stream time past the buffered orders' grace."""
    for partition in range(PARTITIONS):
        produce(bootstrap, "orders", [(b"no-such-product", b"flush", ts)], partition=partition)


def count(bootstrap: str, topic: str, at_least: int, puts_only: bool = False) -> None:
    def enough(records: list) -> bool:
        return sum(1 for r in records if r.value is not None or not puts_only) >= at_least

    read_all(bootstrap, topic, until=enough, timeout=120, quiet=0)


def test_versioned_join_with_grace_on_four_partitions_and_two_processes(broker,
                                                                        tmp_path) -> None:
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"prices": PARTITIONS, "orders": PARTITIONS,
                              "priced": PARTITIONS})
    versions: dict[str, list[tuple[int, str]]] = {p: [] for p in PRODUCTS}
    price_records = []
    for v in (0, 1, 3, 2, 4):  # version 2 arrives after version 3
        for p in PRODUCTS:
            versions[p].append((T + 1000 * v, f"{p}-v{v}"))
            price_records.append((p, f"{p}-v{v}", T + 1000 * v))
    batch1 = [(PRODUCTS[i % 40], f"o{i}", T + 1 + (i * 37) % 4999) for i in range(200)]
    batch2 = [(PRODUCTS[i % 40], f"o{i}", T + 20_000 + (i * 53) % 1000)
              for i in range(200, 400)]
    late = [(p, f"{p}-v5", T + 19_500) for p in PRODUCTS[:20]]
    for p, value, ts in late:
        versions[p].append((ts, value))
    expected = sorted((p, f"{o}@{price_as_of(versions, p, ts)}", ts)
                      for p, o, ts in batch1 + batch2)

    apps = [start_app(bootstrap, tmp_path / f"state-{n}", tmp_path / f"app-{n}.log")
            for n in "ab"]
    try:
        wait_until(lambda: all(app.owns_tasks(APP_ID) for app in apps), timeout=90,
                   message="both instances RUNNING with tasks")
        produce(bootstrap, "prices", encode(price_records))
        count(bootstrap, PRICES_CHANGELOG, len(price_records))
        produce(bootstrap, "orders", encode(batch1))
        flush(bootstrap, T + 10_000)
        read_all(bootstrap, "priced", until=lambda rs: len(rs) >= len(batch1), timeout=120)

        produce(bootstrap, "orders", encode(batch2))
        produce(bootstrap, "prices", encode(late))
        count(bootstrap, PRICES_CHANGELOG, len(price_records) + len(late))
        # batch 2 waits in the buffers (changelogged) of both instances; then b goes away
        count(bootstrap, BUFFER_CHANGELOG, len(batch1) + len(batch2) + PARTITIONS,
              puts_only=True)
        apps[1].stop()
        assert "CLOSED" in apps[1].output(), apps[1].output()
        flush(bootstrap, T + 40_000)
        records = read_all(bootstrap, "priced", timeout=120,
                           until=lambda rs: len(rs) >= len(expected))
    finally:
        for app in apps:
            app.stop()
    got = sorted((r.key.decode(), r.value.decode(), r.timestamp) for r in records)
    assert got == expected
    assert "CLOSED" in apps[0].output(), apps[0].output()


def test_interactive_query_of_a_versioned_table(broker, tmp_path) -> None:
    """``KafkaStreams.store(name).get(key, as_of_timestamp)`` on a running app's versioned
    table, on 2 partitions."""
    from streams import KafkaStreams, Materialized, Serdes, Stores, StreamsBuilder
    from streams.runtime import State
    from streams.state.versioned import VersionedRecord

    create_topics(broker.bootstrap, {"history": 2})
    s = Serdes.string()
    builder = StreamsBuilder()
    builder.table("history", key_serde=s, value_serde=s, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("history-store", 3_600_000)))
    app = KafkaStreams(builder.build(), {
        "application.id": "versioned-iq", "bootstrap.servers": broker.bootstrap,
        "commit.interval.ms": 100, "state.dir": str(tmp_path / "state")})
    app.start()
    try:
        assert app.wait_for_state(State.RUNNING, timeout=60)
        keys = [f"k{i}" for i in range(20)]
        produce(broker.bootstrap, "history", encode(
            [(k, f"{k}@{ts}", T + ts) for ts in (10, 30, 20) for k in keys]))
        view = app.store("history-store")
        wait_until(lambda: all(view.get(k, T + 25) is not None and
                               view.get(k, T + 25).value == f"{k}@20" for k in keys),
                   timeout=60, message="the out-of-order versions are queryable")
        for k in keys:
            assert view.get(k) == VersionedRecord(f"{k}@30", T + 30, None)
            assert view.get(k, T + 15) == VersionedRecord(f"{k}@10", T + 10, T + 20)
            assert view.get(k, T + 5) is None
    finally:
        app.close(timeout=30)
    assert app.error is None, repr(app.error)
