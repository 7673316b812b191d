"""`streams connect standalone` as a user runs it: worker + connector config files, restarts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import free_port, wait_until
from worker_helpers import (
    WorkerProcess,
    connector_offsets,
    consume_all,
    http,
    produce,
    standalone,
    wait_running,
)

from connect.api import SinkConnector, SinkTask


@pytest.fixture
def files(tmp_path: Path, broker) -> Iterator[dict[str, Path | str]]:
    port = free_port()
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"bootstrap.servers={broker.bootstrap}\n"
        f"listeners=http://127.0.0.1:{port}\n"
        f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n"
        "offset.flush.interval.ms=100\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n")
    source = tmp_path / "source.properties"
    source.write_text(f"name=file-source\nconnector.class=FileStreamSource\n"
                      f"file={tmp_path / 'input.txt'}\ntopic=lines\nbatch.size=50\n")
    sink = tmp_path / "sink.json"
    sink.write_text(json.dumps({"name": "file-sink", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "file": str(tmp_path / "output.txt"), "topics": "lines", "tasks.max": 1}}))
    yield {"worker": worker, "source": source, "sink": sink, "url": f"http://127.0.0.1:{port}",
           "input": tmp_path / "input.txt", "output": tmp_path / "output.txt"}


def append_lines(path: Path, start: int, stop: int) -> None:
    with open(path, "a") as handle:
        handle.writelines(f"line-{i}\n" for i in range(start, stop))


def output_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_file_lands_exactly_once_across_restart(files, tmp_path: Path, broker) -> None:
    append_lines(files["input"], 0, 500)
    args = ["standalone", str(files["worker"]), str(files["source"]), str(files["sink"])]
    worker = WorkerProcess(args, tmp_path / "worker.log", files["url"]).start()
    try:
        wait_running(files["url"], "file-source", 1)
        wait_running(files["url"], "file-sink", 1)
        wait_until(lambda: len(output_lines(files["output"])) >= 500, 60,
                   message="500 lines through the sink")
    finally:
        worker.stop()
    assert worker.proc is not None and worker.proc.returncode == 0

    append_lines(files["input"], 500, 800)
    worker = WorkerProcess(args, tmp_path / "worker.log", files["url"]).start()
    try:
        wait_until(lambda: len(output_lines(files["output"])) >= 800, 60,
                   message="800 lines through the sink")
        expected = [f"line-{i}" for i in range(800)]
        records = consume_all(broker.bootstrap, "lines", 800)
        assert [r.value.decode() for r in records] == expected
        assert all(r.key is None for r in records)
        # The sink committed what it wrote before stopping: nothing written twice either.
        assert output_lines(files["output"]) == expected
        size = files["input"].stat().st_size
        wait_until(lambda: http("GET", files["url"] + "/connectors/file-source/offsets")[1] == {
            "offsets": [{"partition": {"filename": str(files["input"])},
                         "offset": {"position": size}}]}, 30, message="the final offset")
    finally:
        worker.stop()


def test_sigkill_loses_no_line(files, tmp_path: Path, broker) -> None:
    append_lines(files["input"], 0, 3000)
    args = ["standalone", str(files["worker"]), str(files["source"])]
    worker = WorkerProcess(args, tmp_path / "worker.log", files["url"]).start()
    try:
        wait_until(lambda: connector_offsets(files["url"], "file-source"), 60,
                   message="some offsets committed")
    finally:
        worker.kill()
    worker = WorkerProcess(args, tmp_path / "worker.log", files["url"]).start()
    try:
        size = files["input"].stat().st_size
        wait_until(lambda: connector_offsets(files["url"], "file-source")
                   == [{"partition": {"filename": str(files["input"])},
                        "offset": {"position": size}}], 60,
                   message="everything committed after the restart")
        values = [r.value.decode() for r in consume_all(broker.bootstrap, "lines", 3000)]
        assert set(values) == {f"line-{i}" for i in range(3000)}  # at-least-once after a crash
    finally:
        worker.stop()


def test_rest_created_connector_and_bad_cli_config(files, tmp_path: Path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("name=bad\nconnector.class=FileStreamSource\n")  # no topic
    result = subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "connect", "standalone", str(files["worker"]),
         str(bad)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "topic" in result.stderr and "bad" in result.stderr

    missing = subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "connect", "standalone",
         str(tmp_path / "nope.properties")], capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and "nope.properties" in missing.stderr

    typo = tmp_path / "typo.properties"
    typo.write_text(files["worker"].read_text() + "offset.flush.intervall.ms=5\n")
    result = subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "connect", "standalone", str(typo)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "offset.flush.interval.ms" in result.stderr


def test_bootstrap_servers_flag_and_a_misspelled_connector_key(files, tmp_path: Path,
                                                               broker) -> None:
    """--bootstrap-servers overrides the worker file's; a connector key nobody reads (``fiel``)
    is a WARN naming the nearest known key, as Kafka logs unknown configs."""
    worker_file = tmp_path / "elsewhere.properties"
    worker_file.write_text(files["worker"].read_text().replace(
        f"bootstrap.servers={broker.bootstrap}", "bootstrap.servers=127.0.0.1:1"))
    typo = tmp_path / "typo-source.properties"
    typo.write_text(f"name=typo-source\nconnector.class=FileStreamSource\n"
                    f"file={files['input']}\nfiel=/tmp/other\ntopic=typo-lines\n")
    append_lines(files["input"], 0, 20)
    log = tmp_path / "typo.log"
    worker = WorkerProcess(["standalone", str(worker_file), str(typo), "--bootstrap-servers",
                            broker.bootstrap], log, files["url"]).start()
    try:
        wait_running(files["url"], "typo-source", 1)
        records = consume_all(broker.bootstrap, "typo-lines", 20)
        assert [r.value.decode() for r in records] == [f"line-{i}" for i in range(20)]
    finally:
        worker.stop()
    warnings = [line for line in log.read_text().splitlines() if "isn't a known config" in line]
    assert len(warnings) == 1, log.read_text()[-3000:]
    assert warnings[0].endswith("connector 'typo-source': the configuration 'fiel' was supplied "
                                "but isn't a known config; did you mean 'file'?")
    assert " WARNING " in warnings[0]


# -- sink offsets follow pre_commit ---------------------------------------------------------------


class HalfDurableTask(SinkTask):
    """Claims durability only up to offset 2 of each partition, whatever it was given."""

    def start(self, props: dict[str, str]) -> None:
        self.seen: dict = {}

    def put(self, records: list) -> None:
        for record in records:
            tp = (record.original_topic, record.original_kafka_partition)
            self.seen[tp] = record.original_kafka_offset

    def pre_commit(self, current_offsets: dict) -> dict:
        return {tp: min(offset, 2) for tp, offset in current_offsets.items()}


class HalfDurableConnector(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        pass

    def task_class(self) -> type:
        return HalfDurableTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]


def test_sink_commits_only_what_pre_commit_returns(tmp_path: Path, broker) -> None:
    produce(broker.bootstrap, "durable-a", [b"1", b"2", b"3", b"4", b"5"])
    produce(broker.bootstrap, "durable-b", [b"x"])
    worker = standalone(tmp_path, broker.bootstrap)
    try:
        code, body = http("POST", worker.url + "/connectors", {"name": "half", "config": {
            "connector.class": f"{__name__}.HalfDurableConnector", "topics.regex": "durable-.*",
            "value.converter": "StringConverter"}})
        assert code == 201, body

        def committed() -> dict:
            offsets = http("GET", worker.url + "/connectors/half/offsets")[1]["offsets"]
            return {o["partition"]["kafka_topic"]: o["offset"]["kafka_offset"] for o in offsets}

        wait_until(lambda: committed() == {"durable-a": 2, "durable-b": 1}, 60,
                   message="offsets limited by pre_commit")
        assert http("GET", worker.url + "/connectors/half/topics")[1] == {
            "half": {"topics": ["durable-a", "durable-b"]}}
    finally:
        worker.stop()
