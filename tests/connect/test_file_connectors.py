"""FileStreamSource / FileStreamSink (reference §5.8) and the DataGen source."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from worker_helpers import ThreadedWorker, consume_all, http, produce, standalone, wait_running

from connect.api import OffsetStorageReader, SourceTaskContext
from connect.config_def import ConfigException
from connect.datagen import DataGenConnector, DataGenTask
from connect.file import FileStreamSinkConnector, FileStreamSourceConnector, FileStreamSourceTask


def source_task(path: Path, offsets: dict[str, Any] | None = None,
                batch: int = 100) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.initialize(SourceTaskContext({}, OffsetStorageReader(
        lambda p: offsets if p == {"filename": str(path)} else None)))
    task.start({"file": str(path), "topic": "t", "batch.size": str(batch)})
    return task


def test_source_splits_lines_and_tracks_byte_positions(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("one\ntwo\r\nthree\rfour\nh\u00e9\nunfinished".encode())
    task = source_task(path)
    records = task.poll()
    assert records is not None
    assert [r.value for r in records] == ["one", "two", "three", "four", "h\u00e9"]
    assert [r.source_offset["position"] for r in records] == [4, 9, 15, 20, 24]
    assert all(r.source_partition == {"filename": str(path)} for r in records)
    assert all(r.topic == "t" and r.key is None and r.kafka_partition is None for r in records)
    assert records[0].value_schema.type.value.upper() == "STRING"
    assert records[0].timestamp is not None
    # The unfinished last line is emitted once its line ends.
    with open(path, "ab") as handle:
        handle.write(b" now\n")
    more = task.poll()
    assert more is not None and [r.value for r in more] == ["unfinished now"]
    assert more[0].source_offset == {"position": path.stat().st_size}
    task.stop()


def test_source_resumes_from_committed_position_and_respects_batch_size(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("".join(f"l{i}\n" for i in range(10)))
    task = source_task(path, {"position": 9}, batch=4)  # after "l0\nl1\nl2\n"
    assert [r.value for r in task.poll() or []] == ["l3", "l4", "l5", "l6"]
    assert [r.value for r in task.poll() or []] == ["l7", "l8", "l9"]
    task.stop()
    assert task.poll() is None


def test_source_connector_always_one_task_and_validates_offsets() -> None:
    connector = FileStreamSourceConnector()
    connector.start({"file": "/x", "topic": "t"})
    assert connector.task_configs(5) == [{"file": "/x", "topic": "t", "batch.size": "2000"}]
    assert connector.alter_offsets({}, [({"filename": "/x"}, {"position": 3})]) is True
    assert connector.alter_offsets({}, [({"filename": "/x"}, None)]) is True
    with pytest.raises(ConfigException):
        connector.alter_offsets({}, [({"filename": "/x"}, {"position": "3"})])
    with pytest.raises(ConfigException):
        connector.alter_offsets({}, [({"other": "/x"}, {"position": 3})])
    with pytest.raises(ConfigException):
        FileStreamSourceConnector().start({"topic": "a,b"})
    sink = FileStreamSinkConnector()
    sink.start({"file": "/o", "topics": "t"})
    assert sink.task_configs(3) == [{"file": "/o"}] * 3


@pytest.fixture
def worker(tmp_path: Path, broker) -> Iterator[ThreadedWorker]:
    instance = standalone(tmp_path, broker.bootstrap, **{
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    try:
        yield instance
    finally:
        instance.stop()


def test_sink_writes_exactly_the_topics_records(worker: ThreadedWorker, tmp_path: Path,
                                                broker) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("events", 3, 1)])
        finally:
            await admin.close()

    import asyncio

    asyncio.run(create())
    values = [json.dumps({"n": i, "s": f"v{i}"}).encode() for i in range(300)]
    produce(broker.bootstrap, "events", values, keys=[str(i % 7).encode() for i in range(300)])
    out = tmp_path / "events.out"
    code, _ = http("POST", worker.url + "/connectors", {"name": "sink", "config": {
        "connector.class": "FileStreamSink", "file": str(out), "topics": "events",
        "tasks.max": "2"}})
    assert code == 201
    wait_running(worker.url, "sink", 2)
    wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 300, 60,
               message="300 lines")
    lines = out.read_text().splitlines()
    assert sorted(json.loads(line)["n"] for line in lines) == list(range(300))
    # Committed offsets cover every partition's end exactly.
    wait_until(lambda: sum(o["offset"]["kafka_offset"] for o in
                           http("GET", worker.url + "/connectors/sink/offsets")[1]["offsets"])
               == 300, message="offsets committed")


def test_datagen_orders(worker: ThreadedWorker, broker) -> None:
    code, body = http("POST", worker.url + "/connectors", {"name": "gen", "config": {
        "connector.class": "DataGen", "quickstart": "orders", "kafka.topic": "orders",
        "iterations": "250", "tasks.max": "2", "max.rate": "0", "random.seed": "7"}})
    assert code == 201, body
    assert len(body["tasks"]) == 2
    records = consume_all(broker.bootstrap, "orders", 250)
    assert len(records) == 250
    values = [json.loads(r.value) for r in records]
    assert {"ordertime", "orderid", "itemid", "orderunits", "price", "total", "userid",
            "address"} <= set(values[0])
    assert all(r.key.decode() == str(v["orderid"]) for r, v in zip(records, values, strict=True))
    assert all(r.timestamp == v["ordertime"] for r, v in zip(records, values, strict=True))
    code, offsets = http("GET", worker.url + "/connectors/gen/offsets")
    wait_until(lambda: sorted(o["offset"]["count"] for o in http(
        "GET", worker.url + "/connectors/gen/offsets")[1]["offsets"]) == [125, 125],
        message="datagen offsets")
    code, body = http("POST", worker.url + "/connectors", {"name": "bad", "config": {
        "connector.class": "DataGen", "quickstart": "weather"}})
    assert code == 400 and "quickstart" in body["message"]


def test_datagen_rate_limit_and_resume() -> None:
    connector = DataGenConnector()
    connector.start({"quickstart": "pageviews", "iterations": "10", "max.rate": "4"})
    configs = connector.task_configs(3)
    assert [c["iterations"] for c in configs] == ["4", "3", "3"]
    assert all(float(c["max.rate"]) == pytest.approx(4 / 3) for c in configs)
    task = DataGenTask()
    task.initialize(SourceTaskContext({}, OffsetStorageReader(lambda p: {"count": 2})))
    task.start({**configs[0], "max.rate": "0"})
    records = task.poll() or []
    assert [r.source_offset["count"] for r in records] == [3, 4]  # resumed at 2 of 4
    assert all(r.key == r.value["userid"] for r in records)
    limited = DataGenTask()
    limited.initialize(SourceTaskContext({}, OffsetStorageReader(lambda p: None)))
    limited.start({**configs[0], "max.rate": "0.001"})
    assert limited.poll() is None  # the rate allows nothing yet
    limited.stop()
