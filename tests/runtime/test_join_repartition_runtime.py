"""A join after a key change, on 4 partitions and 2 processes (issue [7] item 1).

``payments`` is keyed by payment id and re-keyed with ``select_key`` to the user id, then
joined with the ``users`` table (produced with the default partitioner, murmur2 of the string
key). The repartition topic must write the table's key bytes, or a payment lands in a task
whose ``users`` partition does not hold its user and vanishes (80 of 400 joined before the
fix). Also: start-time checks of co-partitioned topics' partition counts, and the build-time
error for a join whose key serde cannot be determined.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import RECENT_TS, wait_until

from streams import KafkaStreams, Serdes, StreamsBuilder
from streams.runtime import State
from streams.topology.topology import TopologyError

from .app_process import AppProcess
from .kafka_io import create_topics, produce, read_all

SCRIPT = Path(__file__).with_name("join_repartition_app.py")
APP_ID = "join-repartition-app"
USERS = 50
PAYMENTS = 400


def start_app(bootstrap: str, state_dir: Path, log: Path) -> AppProcess:
    """One instance of join_repartition_app.py in its own process. Only stateful tasks get a
    directory, and the join's sub-topology (it holds the users table) is the only stateful one."""
    return AppProcess(SCRIPT, [bootstrap, str(state_dir)], log, state_dir=state_dir)


def test_join_after_select_key_on_four_partitions_and_two_processes(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"payments": 4, "users": 4, "payments-enriched": 4})
    regions = {f"user{i}": ("eu", "us", "apac")[i % 3] for i in range(USERS)}
    produce(broker.bootstrap, "users",
            [(u.encode(), r.encode(), RECENT_TS + 1_000 + i) for i, (u, r) in enumerate(regions.items())])
    apps = [start_app(broker.bootstrap, tmp_path / f"state-{n}", tmp_path / f"app-{n}.log")
            for n in "ab"]
    try:
        wait_until(lambda: all(app.owns_tasks(APP_ID) for app in apps), timeout=90,
                   message="both instances RUNNING with join tasks")
        payments = {f"pay{i}": {"id": i, "user": f"user{i % USERS}", "amount": i}
                    for i in range(PAYMENTS)}
        produce(broker.bootstrap, "payments",
                [(k.encode(), json.dumps(p).encode(), RECENT_TS + 10_000 + p["id"])
                 for k, p in payments.items()])

        def joined(records) -> set[int]:
            return {json.loads(r.value)["id"] for r in records}

        records = read_all(broker.bootstrap, "payments-enriched",
                           until=lambda rs: len(joined(rs)) >= PAYMENTS, timeout=120)
    finally:
        for app in apps:
            app.stop()
    assert joined(records) == set(range(PAYMENTS))
    for r in records:
        value = json.loads(r.value)
        assert r.key.decode() == value["user"]
        assert value["region"] == regions[value["user"]]
    for app in apps:
        assert "CLOSED" in app.output(), app.output()


def _config(broker_bootstrap: str, tmp_path: Path, app_id: str) -> dict[str, object]:
    return {"application.id": app_id, "bootstrap.servers": broker_bootstrap,
            "commit.interval.ms": 100, "state.dir": str(tmp_path / app_id)}


def test_join_whose_key_serde_cannot_be_determined_is_rejected_when_built(tmp_path) -> None:
    """No serde on the join, none on the table, no default.key.serde: KafkaStreams refuses the
    topology before anything runs, naming the join and the serde to pass."""
    s = Serdes.string()
    builder = StreamsBuilder()
    users = builder.table("users", value_serde=s)
    (builder.stream("payments", key_serde=s, value_serde=Serdes.json())
        .select_key(lambda k, p: p["user"])
        .join(users, lambda p, region: region)
        .to("payments-enriched", key_serde=s, value_serde=s))
    topology = builder.build()
    with pytest.raises(TopologyError, match=r"KSTREAM-JOIN-\d+.*key_serde=.*default\.key\.serde"):
        KafkaStreams(topology, _config("127.0.0.1:1", tmp_path, "no-serde"))
    # the configured default is what the repartition then uses
    config = {**_config("127.0.0.1:1", tmp_path, "default-serde"), "default.key.serde": "string"}
    KafkaStreams(topology, config).close()


def test_join_of_user_topics_with_different_partition_counts_fails_at_start(broker,
                                                                             tmp_path) -> None:
    create_topics(broker.bootstrap, {"users": 2, "payments": 4})
    s = Serdes.string()
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=s, value_serde=s)
    builder.stream("payments", key_serde=s, value_serde=s).join(
        users, lambda p, region: region).to("payments-enriched", key_serde=s, value_serde=s)
    streams = KafkaStreams(builder.build(), _config(broker.bootstrap, tmp_path, "mismatch"))
    streams.start()
    try:
        assert streams.wait_for_state(State.ERROR, timeout=30)
        message = str(streams.error)
        assert "Following topics do not have the same number of partitions: " \
               "[{payments=4, users=2}]" in message
        assert "KSTREAM-JOIN-" in message
    finally:
        streams.close(timeout=10)
