"""Fetches served with sendfile(2) from segment files: aiokafka, kafka-python and confluent-kafka
consumers read exactly what was produced, across segment boundaries, compressed or not, with
read_committed and aborted transactions, and while retention deletes old segments."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTP
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import EmbeddedBroker, wait_until
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTP

from streams.broker import server
from streams.broker.handlers import fetch as fetch_handler
from streams.broker.storage.files import FILES
from streams.broker.storage.slices import FileSlice, Frame

SEGMENT_BYTES = 96 * 1024
Expected = list[tuple[int, bytes, bytes]]  # offset, key, value


@pytest.fixture
def sendfiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of the record sets the broker sent with sendfile."""
    sizes: list[int] = []
    original = server._sendfile

    async def spy(transport, sock_fd, part) -> None:  # type: ignore[no-untyped-def]
        sizes.append(part.size)
        await original(transport, sock_fd, part)

    monkeypatch.setattr(server, "_sendfile", spy)
    return sizes


def _value(i: int) -> bytes:
    # Incompressible, of varying size: batches fill up past the zero-copy threshold.
    return b"".join(hashlib.sha256(f"{i}-{j}".encode()).digest() for j in range(4 + i % 20))


def _create(broker: EmbeddedBroker, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={
        "segment.bytes": str(SEGMENT_BYTES), **configs})], operation_timeout=10)
    futures[topic].result(15)


def _produce(broker: EmbeddedBroker, topic: str, count: int, codec: str = "none",
             start: int = 0) -> Expected:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20,
                         "batch.size": 64 * 1024, "compression.type": codec, "acks": "all"})
    acked: dict[int, int] = {}

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        acked[int(msg.key())] = msg.offset()

    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=_value(i), partition=0,
                         on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    return sorted((acked[i], str(i).encode(), _value(i)) for i in range(start, start + count))


def _read_confluent(broker: EmbeddedBroker, topic: str, count: int, start: int = 0,
                    **conf: object) -> Expected:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "zc",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 200_000, "max.partition.fetch.bytes": 100_000,
                  "message.max.bytes": 100_000, **conf})
    got: Expected = []
    try:
        c.assign([TopicPartition(topic, 0, start)])

        def done() -> bool:
            for m in c.consume(500, 0.2):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key(), m.value()))
            return len(got) >= count

        wait_until(done, 60, interval=0, message=f"{count} records (confluent-kafka)")
    finally:
        c.close()
    return got


def _read_kafka_python(broker: EmbeddedBroker, topic: str, count: int, start: int = 0,
                       **conf: object) -> Expected:
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                      auto_offset_reset="earliest", max_partition_fetch_bytes=100_000,
                      fetch_max_bytes=200_000, **conf)
    got: Expected = []
    try:
        tp = KpTP(topic, 0)
        c.assign([tp])
        c.seek(tp, start)

        def done() -> bool:
            for records in c.poll(timeout_ms=200).values():
                got.extend((r.offset, r.key, r.value) for r in records)
            return len(got) >= count

        wait_until(done, 60, interval=0, message=f"{count} records (kafka-python)")
    finally:
        c.close()
    return got


def _read_aiokafka(broker: EmbeddedBroker, topic: str, count: int, start: int = 0,
                   **conf: object) -> Expected:
    async def run() -> Expected:
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", max_partition_fetch_bytes=100_000,
                             fetch_max_bytes=200_000, **conf)
        await c.start()
        got: Expected = []
        try:
            tp = AioTP(topic, 0)
            c.assign([tp])
            c.seek(tp, start)
            deadline = time.monotonic() + 60
            while len(got) < count:
                assert time.monotonic() < deadline, f"only {len(got)} of {count} (aiokafka)"
                for records in (await c.getmany(timeout_ms=200)).values():
                    got.extend((r.offset, r.key, r.value) for r in records)
        finally:
            await c.stop()
        return got

    return asyncio.run(run())


READERS = {"confluent": _read_confluent, "kafka-python": _read_kafka_python,
           "aiokafka": _read_aiokafka}


def _segments(broker: EmbeddedBroker, topic: str) -> int:
    return len(broker.call(lambda: broker.broker.topics.partition(topic, 0).segments))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_client_reads_what_was_produced_across_segments(
        broker: EmbeddedBroker, sendfiles: list[int], codec: str) -> None:
    _create(broker, "zc")
    expected = _produce(broker, "zc", 1500, codec)
    assert _segments(broker, "zc") > 5
    for name, read in READERS.items():
        sendfiles.clear()
        assert read(broker, "zc", len(expected)) == expected, name
        assert sendfiles and all(s >= fetch_handler.ZERO_COPY_MIN_BYTES for s in sendfiles)
        # From the middle of a batch in the middle of a segment, too.
        middle = expected[len(expected) // 2 + 3][0]
        tail = [e for e in expected if e[0] >= middle]
        assert read(broker, "zc", len(tail), start=middle) == tail, name
    assert broker.call(FILES.pinned_count) == 0


def test_read_committed_stops_at_aborts(broker: EmbeddedBroker, sendfiles: list[int]) -> None:
    _create(broker, "zc-txn")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "zc-tx",
                         "linger.ms": 20, "batch.size": 64 * 1024})
    producer.init_transactions(15)
    committed: list[bytes] = []
    for round_no, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(round_no * 400, round_no * 400 + 400):
            producer.produce("zc-txn", key=str(i).encode(), value=_value(i), partition=0)
        if commit:
            producer.commit_transaction(30)
            committed += [_value(i) for i in range(round_no * 400, round_no * 400 + 400)]
        else:
            producer.flush(30)
            producer.abort_transaction(30)
    # An open transaction at the end: read_committed stops at the last stable offset.
    producer.begin_transaction()
    producer.produce("zc-txn", key=b"open", value=b"open", partition=0)
    producer.flush(30)
    try:
        for name, read in READERS.items():
            sendfiles.clear()
            conf = ({"isolation.level": "read_committed"} if name == "confluent"
                    else {"isolation_level": "read_committed"})
            got = read(broker, "zc-txn", len(committed), **conf)
            assert [v for _, _, v in got] == committed, name
            assert sendfiles, name
    finally:
        producer.abort_transaction(30)


def test_consumers_keep_reading_while_retention_deletes_segments(
        broker: EmbeddedBroker, sendfiles: list[int]) -> None:
    _create(broker, "zc-ret")
    expected = _produce(broker, "zc-ret", 2000)
    by_offset = {o: (k, v) for o, k, v in expected}
    plog = broker.call(lambda: broker.broker.topics.partition("zc-ret", 0))
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "zc-ret",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "max.partition.fetch.bytes": 40_000, "fetch.max.bytes": 40_000,
                  "message.max.bytes": 40_000})
    got: Expected = []
    try:
        c.assign([TopicPartition("zc-ret", 0, 0)])
        last = expected[-1][0]
        step = 0

        def done() -> bool:
            nonlocal step
            for m in c.consume(50, 0.1):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key(), m.value()))
            # Retention moves the log start on while the consumer is mid-way.
            step += 1
            if step % 3 == 0:
                target = min(plog.next_offset, expected[min(step * 20, len(expected) - 1)][0])
                broker.call(lambda: plog.advance_log_start(target))
            return bool(got) and got[-1][0] == last

        wait_until(done, 60, interval=0, message="the consumer reached the log end")
    finally:
        c.close()
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets))  # in order, no duplicates
    assert all(by_offset[o] == (k, v) for o, k, v in got)  # every record intact
    assert plog.segments[0].base_offset > 0  # retention deleted segments meanwhile
    assert broker.call(FILES.pinned_count) == 0


def test_a_response_outlives_the_deletion_of_its_segment(tmp_path: Path) -> None:
    """The race retention can win: a segment is deleted between the fetch handler pinning it
    and the writer sending it. The pinned descriptor still reads the old file, and is closed
    when the response is done with it."""
    instance = EmbeddedBroker(tmp_path / "b").start()
    try:
        _create(instance, "zc-race")
        expected = _produce(instance, "zc-race", 1200)
        plog = instance.call(lambda: instance.broker.topics.partition("zc-race", 0))
        first = plog.segments[0]
        assert len(plog.segments) > 3

        async def fetch_then_delete() -> tuple[bytes, bytes, int]:
            found = plog.locate(0, 50_000)
            assert found is not None and found[0] is first
            _segment, start, stop = found
            inline = first.read_range(start, stop)
            frame = Frame([FileSlice(FILES.acquire(first, "log"), start, stop - start)])
            fd = frame.parts[0].fd  # type: ignore[union-attr]
            plog.advance_log_start(plog.segments[2].base_offset)  # unlinks the segment
            assert not first.log_path.exists()
            a, b = socket.socketpair()
            try:
                a.setblocking(False)
                _reader, writer = await asyncio.open_connection(sock=a)
                loop = asyncio.get_running_loop()
                receiving = loop.run_in_executor(None, _recv_all, b, stop - start)
                await server._write_frame(writer.transport, a.fileno(), frame)
                sent = await receiving
                writer.close()
            finally:
                b.close()
            return inline, sent, fd

        inline, sent, fd = asyncio.run_coroutine_threadsafe(
            fetch_then_delete(), instance.loop).result(30)  # type: ignore[arg-type]
        assert sent == inline and len(sent) > fetch_handler.ZERO_COPY_MIN_BYTES
        assert instance.call(FILES.pinned_count) == 0
        # Closed at the last release (the number may already name another file).
        assert not _names_file(fd, first.log_path)
        rest = [e for e in expected if e[0] >= plog.log_start_offset]
        assert _read_confluent(instance, "zc-race", len(rest), start=rest[0][0]) == rest
    finally:
        instance.stop()



def _recv_all(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        assert chunk, "connection closed early"
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _names_file(fd: int, path: Path) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(str(path))
    except OSError:
        return False
