"""The `_schemas` topic: ids survive a restart, and two registry processes (started with the
CLI, as users run them) on one topic hand out unique ids when registering at the same time."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers import EmbeddedBroker, free_port, wait_until

from streams.registry.client import SchemaRegistryClient
from streams.registry.errors import RegistryError


def start_registry(bootstrap: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streams.cli.main", "registry", "start", "--port", str(port),
             "--bootstrap-servers", bootstrap], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"registry exited: {log.read_text()[-2000:]}")
        try:
            SchemaRegistryClient(url, timeout=1).get_subjects()
            return True
        except RegistryError:
            return False

    wait_until(up, 60, message=f"registry on {url}")
    return proc, url


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def schema(n: int) -> str:
    """Distinct and mutually compatible (only the doc differs)."""
    return json.dumps({"type": "record", "name": "R", "doc": f"schema {n}", "fields": [
        {"name": "f", "type": "int"}]})


def test_two_registries_agree_and_ids_survive_restart(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path / "broker").start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        a, url_a = start_registry(broker.bootstrap, tmp_path / "a.log")
        b, url_b = start_registry(broker.bootstrap, tmp_path / "b.log")
        procs += [a, b]
        clients = [SchemaRegistryClient(url_a), SchemaRegistryClient(url_b)]

        # 40 distinct schemas, registered alternately through both registries at once, into
        # 4 subjects (so versions race too).
        def register(n: int) -> tuple[int, int]:
            return n, clients[n % 2].register(f"race-{n % 4}-value", schema(n))

        with ThreadPoolExecutor(8) as pool:
            ids = dict(pool.map(register, range(40)))
        assert sorted(ids.values()) == list(range(1, 41)), ids  # unique, no gaps
        for client in clients:  # both answer every id with the schema registered under it
            for n, schema_id in ids.items():
                assert client.get_schema(schema_id).schema == schema(n)
        for s in range(4):
            versions = [SchemaRegistryClient(url).get_versions(f"race-{s}-value")
                        for url in (url_a, url_b)]
            assert versions[0] == versions[1] == list(range(1, 11))

        # Stop both, start a new one: the same ids, and the next id continues after them.
        for proc in procs:
            stop(proc)
        c, url_c = start_registry(broker.bootstrap, tmp_path / "c.log")
        procs.append(c)
        fresh = SchemaRegistryClient(url_c)
        for n, schema_id in ids.items():
            assert fresh.get_schema(schema_id).schema == schema(n)
        assert fresh.register("race-0-value", schema(0)) == ids[0]  # known: same id
        assert fresh.register("after-value", schema(100)) == 41
    finally:
        for proc in procs:
            stop(proc)
        broker.stop()


def test_registry_keeps_working_across_a_broker_restart(tmp_path: Path) -> None:
    from streams.registry import SchemaRegistry

    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        with SchemaRegistry(broker.bootstrap, port=0) as registry:
            client = SchemaRegistryClient(registry.url)
            first = client.register("restart-value", schema(1))
            broker.restart()  # same port, same data

            def registered() -> int | None:
                try:
                    return client.register("restart-value", schema(2))
                except RegistryError:
                    return None  # the broker is still coming back

            assert wait_until(registered, 60, message="a write after the restart") == first + 1
            assert client.get_versions("restart-value") == [1, 2]
            assert client.get_schema(first).schema == schema(1)
    finally:
        broker.stop()


def test_hard_delete_leaves_an_id_watermark_compaction_keeps() -> None:
    """After a hard delete and compaction the deleted schema's records are gone; the NOOP
    watermark written with the delete keeps its id from being handed out again."""
    from streams.registry.state import State, encode, id_watermark, schema_key

    value = {"subject": "s", "version": 1, "id": 7, "schema": '"string"', "deleted": True}
    live = State()
    live.apply(encode(schema_key("s", 1)), encode(value))
    assert live.max_id == 7
    # What compaction keeps of: the schema record, its tombstone, the watermark.
    compacted = State()
    compacted.apply(encode(schema_key("s", 1)), None)
    compacted.apply(*map(encode, id_watermark(live.max_id)))
    assert compacted.max_id == 7 and not compacted.subjects


def test_a_schemas_topic_that_is_not_compacted_is_refused(tmp_path: Path) -> None:
    from helpers import create_topics

    broker = EmbeddedBroker(tmp_path / "broker").start()
    try:
        create_topics(broker.bootstrap, {"_schemas": 1})  # cleanup.policy=delete
        proc = subprocess.run(
            [sys.executable, "-m", "streams.cli.main", "registry", "start", "--port",
             str(free_port()), "--bootstrap-servers", broker.bootstrap],
            capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert "cleanup.policy=delete" in proc.stderr and "must be compacted" in proc.stderr
    finally:
        broker.stop()
