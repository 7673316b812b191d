"""Queries across instances: one instance in this process, one in a child process.

Every key is asked through the Python API (``query_metadata_for_key``, the metadata calls) and
through the HTTP endpoint of both instances, which forwards to the owner: each answer must be
the key's true count, whichever instance holds it.
"""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition
from helpers import RECENT_TS, create_topics, free_port, wait_until

from streams import KafkaStreams
from streams.kafka.batching import default_partition
from streams.runtime import State
from streams.runtime.queries import HostInfo, KeyQueryMetadata

from .ops_app import COUNTS, INPUT, WINDOW_MS, WINDOWS, config, topology
from .procs import AppProcess, http_get, produce

PARTITIONS = 4
KEYS = [f"user-{i:03d}" for i in range(60)]
EXPECTED = {key: i % 4 + 1 for i, key in enumerate(KEYS)}


@pytest.fixture
def two_instances(broker, tmp_path):
    create_topics(broker.bootstrap, {INPUT: PARTITIONS})
    port_a, port_b = free_port(), free_port()
    child = AppProcess(broker.bootstrap, tmp_path / "b", f"127.0.0.1:{port_b}").start()
    app = KafkaStreams(topology(), config(broker.bootstrap, str(tmp_path / "a"),
                                          f"127.0.0.1:{port_a}"))
    app.start()
    try:
        yield app, child, HostInfo("127.0.0.1", port_a), HostInfo("127.0.0.1", port_b)
    finally:
        app.close(timeout=30)
        child.stop()


def test_any_key_through_either_instance(broker, two_instances) -> None:
    app, child, host_a, host_b = two_instances
    records = [(key.encode(), b"x", RECENT_TS + n * 1000)
               for key, count in EXPECTED.items() for n in range(count)]
    produce(broker.bootstrap, INPUT, records)

    def all_counted() -> bool:
        if len(app.metadata_for_all_streams_clients()) != 2:
            return False
        status, body = http_get(f"http://{host_a}/stores/{COUNTS}/all?limit=1000")
        return status == 200 and body["complete"] and \
            {e["key"]: e["value"] for e in body["entries"]} == EXPECTED
    wait_until(all_counted, timeout=90, message=f"both instances up and every key counted; "
               f"child said: {child.output()[-2000:]}")
    assert app.state is State.RUNNING

    clients = app.metadata_for_all_streams_clients()
    assert {m.host_info for m in clients} == {host_a, host_b}
    for_store = app.streams_metadata_for_store(COUNTS)
    assert {m.host_info for m in for_store} == {host_a, host_b}
    assert all(COUNTS in m.state_store_names and WINDOWS in m.state_store_names for m in clients)
    owned = [{tp.partition for tp in m.topic_partitions if tp.topic == INPUT} for m in for_store]
    assert owned[0] | owned[1] == set(range(PARTITIONS)) and not owned[0] & owned[1]

    local = app.store(COUNTS)
    owners = set()
    for key, count in EXPECTED.items():
        meta = app.query_metadata_for_key(COUNTS, key)
        assert meta.partition == default_partition(key.encode(), PARTITIONS)
        assert meta.standby_hosts == []
        owners.add(meta.active_host)
        # the local store holds exactly the keys this instance owns
        assert local.get(key) == (count if meta.active_host == host_a else None), key
        for host in (host_a, host_b):
            status, body = http_get(f"http://{host}/stores/{COUNTS}/keys/{key}")
            assert (status, body) == (200, {"key": key, "value": count}), (host, key)
    assert owners == {host_a, host_b}
    [thread] = app.metadata_for_local_threads()
    assert thread.thread_state == "RUNNING" and thread.standby_tasks == ()
    mine = {tp for task in thread.active_tasks for tp in task.topic_partitions}
    assert {tp.partition for tp in mine} == {p for p in owned[0] | owned[1]
                                             if any(m.host_info == host_a and
                                                    TopicPartition(INPUT, p) in m.topic_partitions
                                                    for m in for_store)}
    for task in thread.active_tasks:
        for tp in task.topic_partitions:
            assert task.committed_offsets.get(tp, 0) <= task.end_offsets[tp]

    status, body = http_get(f"http://{host_b}/stores/{COUNTS}/keys/nobody")
    assert status == 404 and "nobody" in body["error"]
    status, body = http_get(f"http://{host_b}/stores/no-such-store/keys/x")
    assert status == 404 and "no-such-store" in body["error"]
    assert app.query_metadata_for_key(COUNTS, "x", key_serializer=lambda k: k.encode()) \
        == app.query_metadata_for_key(COUNTS, "x")
    with pytest.raises(KeyError, match="no-such-store"):
        app.query_metadata_for_key("no-such-store", "x")

    # the window store: every key's records fall in the minute windows of their timestamps
    key = KEYS[3]  # 4 records, one second apart: one window
    for host in (host_a, host_b):
        status, body = http_get(f"http://{host}/stores/{WINDOWS}/keys/{key}"
                                f"?from={RECENT_TS - WINDOW_MS}&to={RECENT_TS + WINDOW_MS}")
        assert status == 200, body
        assert body == {"key": key, "value": [{"start": RECENT_TS, "end": RECENT_TS + WINDOW_MS,
                                               "value": 4}]}
        status, body = http_get(f"http://{host}/stores/{WINDOWS}/keys/{key}"
                                f"?from={RECENT_TS + WINDOW_MS}&to={RECENT_TS + 2 * WINDOW_MS}")
        assert status == 404

    # range and all gather from both instances, and honour the limit
    status, body = http_get(f"http://{host_b}/stores/{COUNTS}/range?from=user-010&to=user-019")
    assert status == 200 and body["complete"]
    assert {e["key"]: e["value"] for e in body["entries"]} == \
        {k: v for k, v in EXPECTED.items() if "user-010" <= k <= "user-019"}
    status, body = http_get(f"http://{host_b}/stores/{COUNTS}/all?limit=7")
    assert status == 200 and len(body["entries"]) == 7 and not body["complete"]
    status, body = http_get(f"http://{host_b}/stores/{WINDOWS}/all")
    assert status == 200 and len(body["entries"]) == len(KEYS)
    status, body = http_get(f"http://{host_a}/stores/{COUNTS}/all?limit=0")
    assert status == 400 and "limit" in body["error"]
    status, body = http_get(f"http://{host_a}/no/such/path")
    assert status == 404 and "/no/such/path" in body["error"]

    # The owner dies: until the group notices (session.timeout.ms), a query forwarded to it
    # says which instance is unreachable and why, in words.
    theirs = next(k for k in KEYS if app.query_metadata_for_key(COUNTS, k).active_host == host_b)
    assert child.proc is not None
    child.proc.kill()
    child.proc.wait(10)
    status, body = http_get(f"http://{host_a}/stores/{COUNTS}/keys/{theirs}")
    assert status == 503, body
    assert body["error"] == (f"the instance owning this key ({host_b}) is unreachable "
                             "(connection refused); retry when it is back, or once the group has moved "
                             "its tasks")


def test_metadata_not_available_before_start(tmp_path) -> None:
    app = KafkaStreams(topology(), config("127.0.0.1:1", str(tmp_path), "127.0.0.1:7070"))
    assert app.query_metadata_for_key(COUNTS, "k") is KeyQueryMetadata.NOT_AVAILABLE
    assert app.metadata_for_all_streams_clients() == []
    assert app.streams_metadata_for_store(COUNTS) == []
    assert app.metadata_for_local_threads() == []


def test_bad_application_server_is_named(tmp_path) -> None:
    with pytest.raises(ValueError, match="application.server"):
        KafkaStreams(topology(), config("127.0.0.1:1", str(tmp_path), "no-port"))


def test_streams_run_serves_the_query_endpoint(broker, tmp_path) -> None:
    """`streams run` with application.server in its properties answers queries over HTTP."""
    import signal
    import subprocess
    import sys

    from .procs import ROOT

    create_topics(broker.bootstrap, {"run-input": 2})
    app_file = tmp_path / "counter.py"
    app_file.write_text(
        "from streams import Materialized, Serdes, StreamsBuilder\n\n"
        "def topology():\n"
        "    s = Serdes.string()\n"
        "    builder = StreamsBuilder()\n"
        "    builder.stream('run-input', key_serde=s, value_serde=s).group_by_key()"
        ".count(Materialized('run-counts'))\n"
        "    return builder.build()\n")
    port = free_port()
    props = tmp_path / "app.properties"
    props.write_text(f"application.server=127.0.0.1:{port}\nstate.dir={tmp_path / 'state'}\n"
                     "commit.interval.ms=100\n")
    log = open(tmp_path / "run.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "streams.cli.main", "run",
                             f"{app_file}:topology", "--bootstrap-servers", broker.bootstrap,
                             "--config", str(props)], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        produce(broker.bootstrap, "run-input",
                [(b"alice", b"x", RECENT_TS), (b"alice", b"y", RECENT_TS),
                 (b"bob", b"z", RECENT_TS)])
        wait_until(lambda: http_get(f"http://127.0.0.1:{port}/stores/run-counts/keys/alice")
                   == (200, {"key": "alice", "value": 2}), timeout=90,
                   message=f"streams run answering; it said: "
                           f"{(tmp_path / 'run.log').read_text()[-2000:]}")
        assert http_get(f"http://127.0.0.1:{port}/stores/run-counts/keys/bob") == \
            (200, {"key": "bob", "value": 1})
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def test_query_server_binding(tmp_path) -> None:
    """A host this machine does not have (a published name) serves on every interface; a port
    in use fails naming application.server."""
    import socket

    from streams.runtime.query_server import QueryServer

    app = KafkaStreams(topology(), config("127.0.0.1:1", str(tmp_path), None))
    port = free_port()
    server = QueryServer(app, f"name-of-a-load-balancer.invalid:{port}").start()
    try:
        status, body = http_get(f"http://127.0.0.1:{port}/stores/{COUNTS}/all")
        assert status in (200, 503) and isinstance(body, dict)
    finally:
        server.stop()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with pytest.raises(OSError, match=f"application.server=127.0.0.1:{taken}"):
            QueryServer(app, f"127.0.0.1:{taken}").start()


def test_the_readme_word_count_is_queryable_by_key(broker, tmp_path) -> None:
    """The README's word count groups by a key it gives no serde: its store holds the keys in
    the internal format, and HTTP keys, ranges and ``query_metadata_for_key`` read them so."""
    from streams import Materialized, Serdes, StreamsBuilder

    create_topics(broker.bootstrap, {"wc-text": 2})
    builder = StreamsBuilder()
    lines = builder.stream("wc-text", key_serde=Serdes.string(), value_serde=Serdes.string())
    (lines.flat_map_values(lambda line: line.lower().split())
          .group_by(lambda key, word: word)
          .count(Materialized("word-counts")))
    port = free_port()
    app = KafkaStreams(builder.build(), {
        "application.id": "wc-query", "bootstrap.servers": broker.bootstrap,
        "state.dir": str(tmp_path / "state"), "commit.interval.ms": 100,
        "application.server": f"127.0.0.1:{port}"})
    app.start()
    try:
        produce(broker.bootstrap, "wc-text",
                [(None, b"hello world", RECENT_TS), (None, b"Hello again hello", RECENT_TS)])
        base = f"http://127.0.0.1:{port}/stores/word-counts"
        wait_until(lambda: http_get(f"{base}/keys/hello") == (200, {"key": "hello", "value": 3}),
                   timeout=90, message=f"hello counted 3 times: {http_get(f'{base}/all')}")
        status, body = http_get(f"{base}/range?from=a&to=h")
        assert status == 200
        assert {e["key"]: e["value"] for e in body["entries"]} == {"again": 1}
        meta = app.query_metadata_for_key("word-counts", "hello")
        assert meta.active_host == HostInfo("127.0.0.1", port)
        assert http_get(f"{base}/keys/world") == (200, {"key": "world", "value": 1})
    finally:
        app.close(timeout=30)
