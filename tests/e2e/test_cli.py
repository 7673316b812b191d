"""The `streams` command line as a user runs it, against a broker started by the test."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import free_port

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `python -m streams.cli.main ARGS` and capture its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "streams.cli.main", *args],
        input=stdin, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )


def ok(*args: str, stdin: str | None = None) -> str:
    result = cli(*args, stdin=stdin)
    assert result.returncode == 0, f"{args} failed: {result.stderr}"
    return result.stdout


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, *fragments: str) -> None:
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


def test_topics_create_list_describe_delete(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    out = ok("topics", "create", "clicks", "--partitions", "3",
             "--config", "cleanup.policy=compact", "--config", "retention.ms=3600000", *bs)
    assert "Created topic clicks" in out
    assert "clicks" in ok("topics", "list", *bs).split()

    described = ok("topics", "describe", "clicks", *bs).splitlines()
    assert described[0].startswith("Topic: clicks\tPartitionCount: 3\tReplicationFactor: 1")
    assert "cleanup.policy=compact" in described[0]
    assert "retention.ms=3600000" in described[0]
    partitions = described[1:]
    assert len(partitions) == 3
    for n, line in enumerate(partitions):
        assert f"Partition: {n}\tLeader: 0" in line
        assert line.endswith("HighWatermark: 0")

    assert_one_line_error(cli("topics", "create", "clicks", *bs), 1, "clicks", "already exists")

    assert "Deleted topic clicks" in ok("topics", "delete", "clicks", *bs)
    assert "clicks" not in ok("topics", "list", *bs).split()
    assert_one_line_error(cli("topics", "delete", "clicks", *bs), 1, "clicks", "does not exist")


def test_topics_alter_sets_and_removes_configs(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "tuned", "--config", "retention.ms=60000", *bs)
    out = ok("topics", "alter", "tuned", "--config", "cleanup.policy=compact",
             "--delete-config", "retention.ms", *bs)
    assert "Altered topic tuned" in out
    header = ok("topics", "describe", "tuned", *bs).splitlines()[0]
    assert header.endswith("Configs: cleanup.policy=compact")
    assert_one_line_error(cli("topics", "alter", "tuned", "--config", "retention.ms=soon", *bs),
                          1, "retention.ms")
    assert ok("topics", "describe", "tuned", *bs).splitlines()[0].endswith(
        "Configs: cleanup.policy=compact")


def test_describe_missing_topic_fails_without_creating_it(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    assert_one_line_error(cli("topics", "describe", "ghost", *bs), 1, "ghost", "does not exist")
    assert "ghost" not in ok("topics", "list", *bs).split()


def test_create_rejects_unknown_topic_config(broker) -> None:
    result = cli("topics", "create", "t", "--config", "no.such.config=1",
                 "--bootstrap-servers", broker.bootstrap)
    assert_one_line_error(result, 1, "no.such.config")


def test_produce_lines_then_consume_them_back(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "lines", *bs)
    ok("produce", "lines", *bs, stdin="first\nsecond with spaces\n")
    ok("produce", "lines", "--key-separator", ":", *bs, stdin="k1:v1\nk2:v2:with:colons\n")

    values = ok("consume", "lines", "--from-beginning", "--max-messages", "4", *bs)
    assert values.splitlines() == ["first", "second with spaces", "v1", "v2:with:colons"]

    keyed = ok("consume", "lines", "--from-beginning", "--max-messages", "4", "--print-key", *bs)
    assert keyed.splitlines() == ["null\tfirst", "null\tsecond with spaces", "k1\tv1",
                                  "k2\tv2:with:colons"]
    assert ok("topics", "describe", "lines", *bs).splitlines()[1].endswith("HighWatermark: 4")


def test_consume_stops_after_timeout_with_fewer_messages(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "few", "--partitions", "2", *bs)
    ok("produce", "few", "--key-separator", "=", *bs, stdin="a=1\nb=2\n")
    result = cli("consume", "few", "--from-beginning", "--max-messages", "10",
                 "--timeout-ms", "3000", *bs)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["1", "2"]
    assert "Processed a total of 2 messages" in result.stderr


def test_line_without_key_separator_fails_like_kafka(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "strict", *bs)
    result = cli("produce", "strict", "--key-separator", ":", *bs, stdin="a:1\nno separator\nc:3\n")
    assert_one_line_error(result, 1, "No key separator found on line number 2")
    # As with kafka-console-producer, the lines before the bad one were sent, none after it.
    assert ok("topics", "describe", "strict", *bs).splitlines()[1].endswith("HighWatermark: 1")
    assert ok("consume", "strict", "--from-beginning", "--max-messages", "1", "--print-key",
              *bs).splitlines() == ["a\t1"]


@pytest.mark.slow
def test_group_consume_commits_and_groups_describe_shows_lag(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "orders", *bs)
    ok("produce", "orders", *bs, stdin="".join(f"order-{n}\n" for n in range(5)))

    first = ok("consume", "orders", "--group", "billing", "--from-beginning",
               "--max-messages", "3", *bs)
    assert first.splitlines() == ["order-0", "order-1", "order-2"]
    assert "billing" in ok("groups", "list", *bs).split()

    lines = ok("groups", "describe", "billing", *bs).splitlines()
    assert "billing" in lines[0] and "0 member" in lines[0]
    assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert lines[2].split() == ["billing", "orders", "0", "3", "5", "2", "-", "-", "-"]

    # The group resumes from its committed offset.
    rest = ok("consume", "orders", "--group", "billing", "--max-messages", "2", *bs)
    assert rest.splitlines() == ["order-3", "order-4"]
    lines = ok("groups", "describe", "billing", *bs).splitlines()
    assert lines[2].split()[3:6] == ["5", "5", "0"]


def test_groups_describe_after_the_topic_is_deleted_or_recreated(broker) -> None:
    """Describing a group never re-creates a deleted topic, and lag is never negative."""
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "views", *bs)
    ok("produce", "views", *bs, stdin="a\nb\nc\n")
    ok("consume", "views", "--group", "readers", "--from-beginning", "--max-messages", "3", *bs)
    ok("topics", "delete", "views", *bs)

    lines = ok("groups", "describe", "readers", *bs).splitlines()
    assert lines[2].split() == ["readers", "views", "0", "3", "-", "-", "-", "-", "-"]
    assert lines[-1].startswith("Note: views-0: the topic no longer exists")
    assert "views" not in ok("topics", "list", *bs).split()

    ok("topics", "create", "views", *bs)
    ok("produce", "views", *bs, stdin="x\n")
    lines = ok("groups", "describe", "readers", *bs).splitlines()
    assert lines[2].split() == ["readers", "views", "0", "3", "1", "-", "-", "-", "-"]
    assert lines[-1] == ("Note: views-0: committed offset 3 is past the log end 1 (the topic "
                         "was re-created or truncated); lag unknown")


@pytest.mark.slow
@pytest.mark.parametrize(("stop_signal", "exit_code"), [(signal.SIGINT, 130),
                                                        (signal.SIGTERM, 143)])
def test_live_group_member_is_described_and_leaves_on_signal(broker, stop_signal: int,
                                                             exit_code: int) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    ok("topics", "create", "live", "--partitions", "2", *bs)
    ok("produce", "live", *bs, stdin="hello\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams.cli.main", "consume", "live", "--group", "watchers",
         "--from-beginning", *bs],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "hello\n"  # printed, so it owns its partitions
        lines = ok("groups", "describe", "watchers", *bs).splitlines()
        assert "is Stable with 1 member(s)" in lines[0]
        rows = [line.split() for line in lines[2:]]
        assert sorted(row[2] for row in rows) == ["0", "1"]
        assert all(row[6].startswith("aiokafka") for row in rows)  # CONSUMER-ID of the member
        proc.send_signal(stop_signal)
        assert proc.wait(30) == exit_code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    lines = ok("groups", "describe", "watchers", *bs).splitlines()
    assert "is Empty with 0 member(s)" in lines[0]


def test_describe_unknown_group_fails(broker) -> None:
    result = cli("groups", "describe", "nobody", "--bootstrap-servers", broker.bootstrap)
    assert_one_line_error(result, 1, "nobody", "does not exist")


@pytest.mark.parametrize("command", [
    ["topics", "list"],
    ["topics", "create", "t"],
    ["topics", "describe", "t"],
    ["topics", "delete", "t"],
    ["produce", "t"],
    ["consume", "t", "--max-messages", "1"],
    ["groups", "list"],
    ["groups", "describe", "g"],
])
def test_unreachable_broker_is_one_line_and_exit_1(command: list[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = cli(*command, "--bootstrap-servers", address, stdin="x\n", timeout=30)
    assert_one_line_error(result, 1, f"cannot connect to a broker at {address}")


@pytest.mark.parametrize(("args", "fragment"), [
    (["topics", "create", "t", "--partitions", "0"], "--partitions: must be at least 1, got 0"),
    (["topics", "create", "t", "--replication-factor", "x"], "--replication-factor"),
    (["topics", "create", "t", "--config", "cleanup.policy"], "expected key=value"),
    (["topics", "create", "t", "--config", "=compact"], "expected key=value"),
    (["consume", "t", "--max-messages", "-1"], "--max-messages"),
    (["topics", "list", "--bootstrap-servers", "localhost"], "expected HOST:PORT"),
])
def test_bad_arguments_exit_2_naming_the_argument(args: list[str], fragment: str) -> None:
    result = cli(*args, timeout=30)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr


@pytest.mark.slow
def test_broker_demo_runs_and_exits_0() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "broker_demo.py")],
                            capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every record arrived exactly once" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_streams_demo_counts_every_view_exactly_once(tmp_path: Path) -> None:
    """The streams-only demo: a join + windowed count under exactly_once_v2 on the bundled broker.
    Its output goes to a pipe, so progress comes as plain lines (no carriage returns), and it
    removes its temporary data when it ends."""
    import os

    result = subprocess.run([sys.executable, str(ROOT / "examples" / "streams_demo.py"),
                             "--views", "3000"], env={**os.environ, "TMPDIR": str(tmp_path)},
                            capture_output=True, text=True, timeout=150, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every count matches what was produced" in result.stdout
    assert "3,000 views processed end to end" in result.stdout
    assert "3,000/3,000 views counted" in result.stdout
    assert "\r" not in result.stdout
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("streams-demo-*")), "the demo left its data directory behind"
