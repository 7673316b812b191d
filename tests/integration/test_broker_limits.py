"""Partition floods: limits checked before side effects, all-or-nothing creation, bounded open
files, orphan directories removed at start, and an accept loop that survives EMFILE quietly."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import textwrap
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from confluent_kafka.error import KafkaException
from helpers import EmbeddedBroker, free_port, wait_until
from test_bad_input import api_versions_v0

from streams.broker.records import Record, build_batch, decode_records, validate_produced

POLICY_VIOLATION = 44
KAFKA_STORAGE_ERROR = 56


def create_error(bootstrap: str, topic: NewTopic) -> KafkaException | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([topic], request_timeout=60)[topic.topic].result(60)
    except KafkaException as exc:
        return exc
    return None


def add_error(bootstrap: str, topic: str, total: int) -> KafkaException | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_partitions([NewPartitions(topic, total)], request_timeout=60)[topic].result(60)
    except KafkaException as exc:
        return exc
    return None


def partition_dirs(data_dir: Path, topic: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir()
                  if p.is_dir() and p.name.rsplit("-", 1)[0] == topic)


def saved_partitions(data_dir: Path) -> dict[str, int]:
    state = json.loads((data_dir / "topics.json").read_text())
    return {name: entry["partitions"] for name, entry in state["topics"].items()}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def limited(tmp_path):
    broker = EmbeddedBroker(tmp_path / "b", max_partitions=3000, log_max_open_files=64).start()
    yield broker
    broker.stop()


def test_more_partitions_than_the_limit_are_refused_before_any_side_effect(limited) -> None:
    error = create_error(limited.bootstrap, NewTopic("flood", 5000, 1))
    assert error is not None and error.args[0].code() == POLICY_VIOLATION
    assert "max.partitions=3000" in error.args[0].str()
    assert partition_dirs(limited.data_dir, "flood") == []
    assert "flood" not in saved_partitions(limited.data_dir)
    assert "flood" not in limited.broker.topics.topics

    assert create_error(limited.bootstrap, NewTopic("grow", 2, 1)) is None
    error = add_error(limited.bootstrap, "grow", 100_000)
    assert error is not None and error.args[0].code() == POLICY_VIOLATION
    assert partition_dirs(limited.data_dir, "grow") == ["grow-0", "grow-1"]
    assert len(limited.broker.topics.topics["grow"].partitions) == 2
    assert saved_partitions(limited.data_dir)["grow"] == 2


def test_a_failure_midway_keeps_nothing(limited) -> None:
    # A file where partition 7's directory must go: creating partition 7 fails.
    (limited.data_dir / "half-7").write_text("in the way")
    error = create_error(limited.bootstrap, NewTopic("half", 20, 1))
    assert error is not None and error.args[0].code() == KAFKA_STORAGE_ERROR
    assert partition_dirs(limited.data_dir, "half") == []
    assert "half" not in saved_partitions(limited.data_dir)
    assert "half" not in limited.broker.topics.topics

    assert create_error(limited.bootstrap, NewTopic("more", 2, 1)) is None
    (limited.data_dir / "more-5").write_text("in the way")
    error = add_error(limited.bootstrap, "more", 10)
    assert error is not None and error.args[0].code() == KAFKA_STORAGE_ERROR
    assert partition_dirs(limited.data_dir, "more") == ["more-0", "more-1"]
    assert len(limited.broker.topics.topics["more"].partitions) == 2
    assert saved_partitions(limited.data_dir)["more"] == 2
    # With the obstacle gone the same request succeeds.
    (limited.data_dir / "more-5").unlink()
    assert add_error(limited.bootstrap, "more", 10) is None
    assert saved_partitions(limited.data_dir)["more"] == 10


def test_idle_partitions_hold_a_bounded_number_of_files(limited) -> None:
    before = open_fds()
    assert create_error(limited.bootstrap, NewTopic("wide", 2000, 1)) is None
    assert open_fds() - before < 64 + 20  # the file cache, not one or three per partition

    # Every partition still reads and writes correctly with files reopened on demand.
    def write_and_read() -> list[bytes]:
        topic = limited.broker.topics.topics["wide"]
        for index, plog in enumerate(topic.partitions[:300]):
            batch = build_batch([Record(b"k", str(index).encode(), 1000)])
            plog.append(bytearray(batch), validate_produced(batch))
        return [decode_records(plog.read(0, 1 << 16))[0].value
                for plog in topic.partitions[:300]]

    assert limited.call(write_and_read) == [str(i).encode() for i in range(300)]
    assert open_fds() - before < 64 + 20


def test_orphan_partition_directories_are_removed_at_start(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    broker = EmbeddedBroker(tmp_path / "b").start()
    try:
        assert create_error(broker.bootstrap, NewTopic("kept", 2, 1)) is None
        broker.stop()
        for name in ("ghost-0", "ghost-1", "kept-2", "kept-17"):
            (broker.data_dir / name).mkdir()
            (broker.data_dir / name / "00000000000000000000.log").write_bytes(b"")
        since = len(caplog.records)
        broker.start()
        assert partition_dirs(broker.data_dir, "ghost") == []
        assert partition_dirs(broker.data_dir, "kept") == ["kept-0", "kept-1"]
        lines = [r.getMessage() for r in caplog.records[since:] if "orphan partition" in r.getMessage()]
        assert lines == ["removed 4 orphan partition directories not in topics.json: ghost-0, "
                         "ghost-1, kept-17, kept-2"]
    finally:
        broker.stop()


BROKER_WITH_FEW_FILES = textwrap.dedent("""
    import resource, runpy, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[1])))
    sys.argv = ["streams", "broker", "start", *sys.argv[2:]]
    runpy.run_module("streams.cli.main", run_name="__main__")
""")


def test_accept_loop_survives_emfile_with_one_line(tmp_path) -> None:
    import subprocess

    port = free_port()
    props = tmp_path / "broker.properties"
    props.write_text("log.max.open.files=16\n")
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", BROKER_WITH_FEW_FILES, "120", "--data-dir",
             str(tmp_path / "data"), "--port", str(port), "--config", str(props)],
            stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    held: list[socket.socket] = []
    try:
        wait_until(lambda: "listening" in log_path.read_text(), 30, message="broker start")
        for _ in range(200):  # far more connections than the broker has descriptors for
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
            except OSError:
                break  # the listen backlog is full too: the broker stopped accepting
        wait_until(lambda: "cannot accept connections" in log_path.read_text(), 30,
                   message="the EMFILE line")
        for sock in held:
            sock.close()
        held.clear()
        wait_until(lambda: _answers(port), 60, message="ApiVersions after EMFILE")
        text = log_path.read_text()
        assert text.count("cannot accept connections") == 1, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        assert proc.poll() is None
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(30)


def _answers(port: int) -> bool:
    try:
        return 18 in api_versions_v0(port)  # ApiVersions lists itself
    except (OSError, ValueError, AssertionError):
        return False
