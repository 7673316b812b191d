"""Bad mm2.properties and clusters: one clear line each, exit non-zero, nothing half-done; a
target topic with fewer partitions than its source is given the missing ones (as Kafka)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import free_port, wait_until
from mirror_helpers import (
    MirrorProcess,
    create_topic,
    partition_count,
    produce,
    read_all,
    run_mirror,
    write_mm2,
)


def _one_line_error(result, *needles: str) -> str:  # noqa: ANN001
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _in_process(args: list[str], capsys: pytest.CaptureFixture[str]):  # noqa: ANN202
    """`streams mirror ARGS` run here (refused before anything starts: no process needed)."""
    from types import SimpleNamespace

    from streams.cli.main import main

    code = main(["mirror", *args])
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.mark.parametrize(("lines", "needles"), [
    (["A->C.enabled = true"], ("A->C.enabled", "'C'", "clusters = A, B")),
    (["A->B.enabled = true", "B->A.enabled = true",
      "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy"],
     ("A -> B -> A", "IdentityReplicationPolicy")),
    (["A->B.enabled = true", "A->B.topicz = x"], ("unknown key 'A->B.topicz'", "topics")),
    (["A->B.enabled = true", "topic.filter.class = com.example.MyFilter"],
     ("topic.filter.class",)),
    (["A->B.enabled = true", "A->B.offset-syncs.topic.location = elsewhere"],
     ("offset-syncs.topic.location",)),
    (["A->B.enabled = true",
      "A->B.replication.policy.class = com.example.MyPolicy"], ("replication.policy.class",)),
])
def test_bad_config_is_one_line(tmp_path: Path, lines: list[str], needles: tuple[str, ...],
                               capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"127.0.0.1:{free_port()}"
    config = write_mm2(tmp_path / "mm2.properties", {"A": dead, "B": dead}, lines)
    _one_line_error(_in_process([str(config)], capsys), *needles)


def test_no_clusters_and_no_flow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.properties"
    empty.write_text("A.bootstrap.servers = x:1\n")
    _one_line_error(_in_process([str(empty)], capsys), "'clusters' is required")
    config = write_mm2(tmp_path / "mm2.properties", {"A": "x:1", "B": "x:2"}, [])
    _one_line_error(_in_process([str(config)], capsys), "no flow is enabled")
    # Exactly as a user sees it: the command in its own process.
    _one_line_error(run_mirror([str(config)]), "no flow is enabled")


@pytest.mark.slow
def test_unreachable_cluster(tmp_path: Path, broker) -> None:
    dead = f"127.0.0.1:{free_port()}"
    config = write_mm2(tmp_path / "mm2.properties", {"A": broker.bootstrap, "B": dead},
                       ["A->B.enabled = true"])
    _one_line_error(run_mirror([str(config)]), "cluster B", dead, "unreachable")
    result = run_mirror(["translate", "--config", str(config), "--source", "A", "--target",
                         "C", "--group", "g"])
    _one_line_error(result, "'C'")


@pytest.mark.slow
def test_target_topic_with_fewer_partitions_is_grown(tmp_path: Path, two_brokers) -> None:
    a, b = two_brokers
    create_topic(a.bootstrap, "orders", 4)
    create_topic(b.bootstrap, "orders", 2)  # IdentityReplicationPolicy: same name on B
    produce(a.bootstrap, [("orders", i % 4, b"k", f"v{i}".encode(), None, []) for i in range(40)])
    config = write_mm2(tmp_path / "mm2.properties", {"A": a.bootstrap, "B": b.bootstrap}, [
        "A->B.enabled = true", "A->B.topics = orders",
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy"])
    mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
    try:
        wait_until(lambda: len(read_all(b.bootstrap, "orders")) >= 40, 90, interval=1,
                   message="orders replicated under the identity policy")
        assert partition_count(b.bootstrap, "orders") == 4
        assert "Target topic orders has 2 partition(s), its source 4: adding 2." in mirror.log()
        assert sorted((r.partition, r.value) for r in read_all(b.bootstrap, "orders")) == \
            sorted((r.partition, r.value) for r in read_all(a.bootstrap, "orders"))
    finally:
        mirror.stop()
