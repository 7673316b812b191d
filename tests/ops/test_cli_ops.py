"""CLI parity with Kafka's tools, each command against a live group on a real broker:
groups reset-offsets / delete / delete-offsets, consume's deserializers and print flags,
produce's --partition / --timestamp / --header, and a closed pipe without a traceback."""

from __future__ import annotations

import asyncio
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiokafka import AIOKafkaConsumer
from helpers import RECENT_TS, create_topics, wait_until

from .procs import ROOT


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", *args], input=stdin,
                            capture_output=True, timeout=60, cwd=ROOT)
    return subprocess.CompletedProcess(result.args, result.returncode,
                                       result.stdout.decode(errors="replace"),
                                       result.stderr.decode(errors="replace"))


def ok(*args: str, stdin: bytes | None = None) -> str:
    result = cli(*args, stdin=stdin)
    assert result.returncode == 0, f"{args} failed: {result.stderr}"
    assert "Traceback" not in result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def usage_error(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    """argparse's rejection: usage, then one line naming the argument."""
    assert result.returncode == 2 and "Traceback" not in result.stderr, result
    assert fragment in result.stderr.strip().splitlines()[-1], result.stderr


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> dict[tuple[str, int], int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            offsets = await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()
        return {(tp.topic, tp.partition): m.offset for tp, m in offsets.items() if m.offset >= 0}
    return asyncio.run(run())


@contextmanager
def active_member(bootstrap: str, group: str, topic: str) -> Iterator[None]:
    """A consumer holding a membership in ``group`` (its loop runs on a thread, so it keeps
    heartbeating) for the duration."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    holder: list[AIOKafkaConsumer] = []

    async def start() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    enable_auto_commit=False)
        holder.append(consumer)
        await consumer.start()
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)

    asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(holder[0].stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_produce_flags_and_consume_formats(broker) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    create_topics(broker.bootstrap, {"fmt": 3})
    ok("produce", "fmt", "--key-separator", ":", "--partition", "2", "--timestamp",
       str(RECENT_TS), "--header", "source=cli", "--header", "empty=", *bs,
       stdin=b"alice:hello\nbob:world\n")
    out = ok("consume", "fmt", "--from-beginning", "--max-messages", "2", "--print-key",
             "--print-timestamp", "--print-partition", "--print-offset", "--print-headers", *bs)
    assert out.splitlines() == [
        f"CreateTime:{RECENT_TS}\tPartition:2\tOffset:0\tsource:cli,empty:\talice\thello",
        f"CreateTime:{RECENT_TS}\tPartition:2\tOffset:1\tsource:cli,empty:\tbob\tworld"]
    one_line_error(cli("produce", "fmt", "--partition", "7", *bs, stdin=b"x\n"),
                   "no partition 7")
    usage_error(cli("produce", "fmt", "--header", "novalue", *bs, stdin=b"x\n"), "KEY=VALUE")

    # binary keys and values, printed through Kafka's deserializer formats
    from .procs import produce
    create_topics(broker.bootstrap, {"nums": 1})
    produce(broker.bootstrap, "nums", [
        (struct.pack(">q", 42), struct.pack(">d", 2.5), RECENT_TS),
        (struct.pack(">q", -7), struct.pack(">d", -1.0), RECENT_TS)])
    out = ok("consume", "nums", "--from-beginning", "--max-messages", "2", "--print-key",
             "--key-deserializer", "long", "--value-deserializer", "double",
             "--key-separator", "=", *bs)
    assert out.splitlines() == ["42=2.5", "-7=-1.0"]
    produce(broker.bootstrap, "nums", [(None, b'{"a": [1, 2]}', RECENT_TS)])
    out = ok("consume", "nums", "--from-beginning", "--max-messages", "3",
             "--value-deserializer", "bytes", *bs)
    assert out.splitlines()[2] == '{"a": [1, 2]}'
    # a value that is not a long: one clear line naming where and what
    one_line_error(cli("consume", "nums", "--from-beginning", "--max-messages", "3",
                       "--value-deserializer", "long", *bs),
                   "nums-0 offset 2", "long", "expected 8 bytes")


def test_consume_into_a_closed_pipe_has_no_traceback(broker) -> None:
    create_topics(broker.bootstrap, {"piped": 1})
    ok("produce", "piped", "--bootstrap-servers", broker.bootstrap,
       stdin=b"".join(b"line %d\n" % i for i in range(5000)))
    result = subprocess.run(
        f"{sys.executable} -m streams.cli.main consume piped --from-beginning "
        f"--bootstrap-servers {broker.bootstrap} | head -1",
        shell=True, capture_output=True, timeout=60, cwd=ROOT)
    assert result.stdout == b"line 0\n"
    assert b"Traceback" not in result.stderr and b"Error" not in result.stderr, result.stderr


def test_group_offsets_reset_delete_against_a_live_group(broker, tmp_path) -> None:
    bs = ("--bootstrap-servers", broker.bootstrap)
    create_topics(broker.bootstrap, {"events": 2})
    lines = b"".join(b"k:v%d\n" % i for i in range(20))
    for partition in (0, 1):  # 20 records per partition; partition 1's 1 ms later
        ok("produce", "events", "--partition", str(partition), "--key-separator", ":",
           "--timestamp", str(RECENT_TS + partition), *bs, stdin=lines)
    ok("consume", "events", "--group", "g1", "--from-beginning", "--max-messages", "24", *bs)
    before = committed(broker.bootstrap, "g1")
    assert sum(before.values()) == 24

    # dry run (explicit and implicit): the plan is printed, nothing changes
    out = ok("groups", "reset-offsets", "--group", "g1", "--topic", "events", "--to-earliest",
             "--dry-run", *bs)
    assert out.split("\n")[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert [line.split() for line in out.splitlines()[1:]] == [
        ["g1", "events", "0", "0"], ["g1", "events", "1", "0"]]
    result = cli("groups", "reset-offsets", "--group", "g1", "--topic", "events",
                 "--to-latest", *bs)
    assert result.returncode == 0 and "--execute" in result.stderr
    assert committed(broker.bootstrap, "g1") == before

    def reset(*scenario: str, topic: str = "events") -> dict[tuple[str, int], int]:
        ok("groups", "reset-offsets", "--group", "g1", "--topic", topic, *scenario,
           "--execute", *bs)
        return committed(broker.bootstrap, "g1")

    assert reset("--to-earliest") == {("events", 0): 0, ("events", 1): 0}
    assert reset("--shift-by", "5") == {("events", 0): 5, ("events", 1): 5}
    assert reset("--shift-by", "-10") == {("events", 0): 0, ("events", 1): 0}  # clamped
    assert reset("--to-offset", "100") == {("events", 0): 20, ("events", 1): 20}  # clamped
    assert reset("--to-offset", "3", topic="events:1") == {("events", 0): 20, ("events", 1): 3}
    assert reset("--to-latest") == {("events", 0): 20, ("events", 1): 20}
    # partition 1's records are 1 ms later than partition 0's: the first at or after it
    iso = "T".join(__import__("datetime").datetime.fromtimestamp(
        (RECENT_TS + 1) / 1000, __import__("datetime").UTC).isoformat().split("T"))
    assert reset("--to-datetime", iso) == {("events", 0): 20, ("events", 1): 0}
    assert reset("--by-duration", "P3650D") == {("events", 0): 0, ("events", 1): 0}
    # --export writes what --from-file reads; --to-current keeps what is committed
    out = ok("groups", "reset-offsets", "--group", "g1", "--topic", "events", "--to-offset", "7",
             "--dry-run", "--export", *bs)
    assert out.splitlines() == ["events,0,7", "events,1,7"]
    plan = tmp_path / "offsets.csv"
    plan.write_text("events,0,3\ng1,events,1,100\n")
    ok("groups", "reset-offsets", "--group", "g1", "--from-file", str(plan), "--execute", *bs)
    assert committed(broker.bootstrap, "g1") == {("events", 0): 3, ("events", 1): 20}
    assert reset("--to-current") == {("events", 0): 3, ("events", 1): 20}
    plan.write_text("events,zero,3\n")
    one_line_error(cli("groups", "reset-offsets", "--group", "g1", "--from-file", str(plan),
                       "--execute", *bs), "offsets.csv:1", "topic,partition,offset")
    assert reset("--to-earliest") == {("events", 0): 0, ("events", 1): 0}
    one_line_error(cli("groups", "reset-offsets", "--group", "g1", "--topic", "events",
                       "--to-datetime", "yesterday", "--execute", *bs), "--to-datetime")
    one_line_error(cli("groups", "reset-offsets", "--group", "g1", "--topic", "nope",
                       "--to-earliest", "--execute", *bs), "nope")

    # a group with an active member is refused, as Kafka's tool does
    with active_member(broker.bootstrap, "g1", "events"):
        one_line_error(cli("groups", "reset-offsets", "--group", "g1", "--topic", "events",
                           "--to-latest", "--execute", *bs), "active member")
        one_line_error(cli("groups", "delete", "--group", "g1", *bs), "not empty")
    assert committed(broker.bootstrap, "g1") == {("events", 0): 0, ("events", 1): 0}

    out = ok("groups", "delete-offsets", "--group", "g1", "--topic", "events:1", *bs)
    assert "events  1          Successful" in out or "Successful" in out.splitlines()[-1]
    assert committed(broker.bootstrap, "g1") == {("events", 0): 0}

    out = ok("groups", "delete", "--group", "g1", *bs)
    assert "'g1'" in out and "successful" in out
    wait_until(lambda: "g1" not in ok("groups", "list", *bs).split(), timeout=10)
    assert committed(broker.bootstrap, "g1") == {}
    one_line_error(cli("groups", "delete", "--group", "g1", *bs), "does not exist")
