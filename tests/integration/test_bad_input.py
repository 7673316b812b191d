"""Malformed input never takes the broker down.

Raw sockets send garbage, truncated frames, absurd sizes, unknown APIs, unsupported versions and
undecodable bodies. Each gets an error response or a closed connection, and each bad connection
leaves exactly one line in the broker log, while a well-behaved confluent-kafka client keeps
producing and consuming on the side.
"""

from __future__ import annotations

import io
import logging
import random
import socket
import struct
import threading
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import wait_until
from kio.index import load_request_schema
from kio.serial import entity_writer

from streams.broker import handlers
from streams.broker.protocol import build_entity, request_is_flexible
from streams.broker.records import Record, build_batch

UNSUPPORTED_VERSION = 35
CORRUPT_MESSAGE = 2


def header(api_key: int, version: int, correlation_id: int, client_id: bytes = b"bad") -> bytes:
    out = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if request_is_flexible(api_key, version):
        out += b"\0"  # empty tag buffer
    return out


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def encode_request(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    """A well-formed request, built with the broker's own dict -> kio entity builder."""
    schema = load_request_schema(api_key, version)
    out = io.BytesIO()
    entity_writer(schema)(out, build_entity(schema, body))
    return framed(header(api_key, version, correlation_id) + out.getvalue())


@dataclass
class Exchange:
    port: int  # our local port: the broker logs it as the peer
    data: bytes  # everything the broker sent before closing

    def responses(self) -> list[tuple[int, bytes]]:
        """(correlation id, body) of each complete response frame."""
        out, pos = [], 0
        while len(self.data) - pos >= 8:
            (size,) = struct.unpack_from(">i", self.data, pos)
            if len(self.data) - pos - 4 < size:
                break
            (corr,) = struct.unpack_from(">i", self.data, pos + 4)
            out.append((corr, self.data[pos + 8 : pos + 4 + size]))
            pos += 4 + size
        return out


def lines_for(caplog, since: int, result: Exchange) -> list[logging.LogRecord]:
    """Log records since index ``since`` that name this connection's peer port."""
    return [r for r in caplog.records[since:] if f", {result.port})" in r.getMessage()]


def exchange(bootstrap_port: int, payload: bytes) -> Exchange:
    """Send ``payload``, half-close, and read until the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", bootstrap_port), timeout=20) as sock:
        port = sock.getsockname()[1]
        try:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the broker already gave up on us: also a closed connection
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return Exchange(port, b"".join(chunks))


def api_versions_v0(port: int) -> dict[int, tuple[int, int]]:
    result = exchange(port, framed(header(18, 0, 4242)))
    [(corr, body)] = result.responses()
    assert corr == 4242
    error, count = struct.unpack_from(">hi", body, 0)
    assert error == 0
    keys = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 6 + 6 * i)
        keys[key] = (lo, hi)
    return keys


class GoodClient(threading.Thread):
    """Produces a record, reads it back, repeats, until stopped."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.stop_event = threading.Event()
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "linger.ms": 0})
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "good",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            consumer.assign([TopicPartition("good", 0, 0)])
            i = 0
            while not self.stop_event.is_set():
                value = f"good-{i}".encode()
                producer.produce("good", value=value, partition=0)
                assert producer.flush(20) == 0, "good producer stuck"
                self.sent.append(value)
                while len(self.received) < len(self.sent):
                    msg = consumer.poll(0.2)
                    if self.stop_event.is_set() and msg is None:
                        return
                    if msg is not None:
                        assert msg.error() is None, msg.error()
                        self.received.append(msg.value())
                i += 1
        except BaseException as exc:  # reported by the test thread
            self.error = exc
        finally:
            consumer.close()
            producer.flush(5)


BAD_INPUTS = {
    "random-bytes": random.Random(7).randbytes(300),
    "random-bytes-in-range-size": struct.pack(">i", 120) + random.Random(8).randbytes(40),
    "truncated-frame": struct.pack(">i", 100) + header(3, 1, 1)[:6],
    "truncated-size": b"\x00\x00",
    "negative-size": struct.pack(">i", -5) + b"x" * 20,
    "min-int-size": struct.pack(">i", -(2**31)),
    "2gb-size": struct.pack(">i", 2**31 - 1) + b"x" * 100,
    "huge-but-allowed-size-then-eof": struct.pack(">i", 50_000_000) + b"x" * 1000,
    "tiny-frame": framed(b"\x00\x03\x00"),
    "truncated-client-id": framed(struct.pack(">hhih", 3, 1, 9, 500) + b"abc"),
    "unknown-api-key": framed(header(999, 0, 11)),
    "negative-api-key": framed(header(-1, 0, 12)),
    "unsupported-produce-v0": framed(header(0, 0, 13) + b"\x00" * 20),
    "unsupported-metadata-v99": framed(header(3, 99, 14)),
    "garbage-produce-body": framed(header(0, 7, 15) + b"\xff" * 5),
    "garbage-metadata-body": framed(header(3, 5, 16) + b"\x00\x00\x00\x05\x00"),
    "garbage-flexible-body": framed(header(3, 9, 17) + b"\x80\x80\x80\x80\x80\x80"),
    # Compact array counts of billions: kio would reserve ~40 GB and abort the process.
    "huge-compact-array-delete-records": framed(header(21, 2, 18) + bytes.fromhex("c28f87ea12")),
    "huge-compact-array-metadata": framed(header(3, 9, 19) + b"\xff\xff\xff\xff\x0f"),
    "huge-compact-array-create-topics": framed(header(19, 5, 20) + b"\xfe\xff\xff\xff\x07"),
}


@pytest.mark.slow
def test_bad_input_never_crashes_the_broker(broker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("good", 1, 1)])["good"].result(15)
    good = GoodClient(broker.bootstrap)
    good.start()
    try:
        wait_until(lambda: len(good.received) >= 3 or good.error, 30, message="good client")
        assert good.error is None

        for name, payload in BAD_INPUTS.items():
            since = len(caplog.records)
            result = exchange(broker.port, payload)
            assert result.responses() == [], name  # nothing to answer: the broker hung up
            lines = lines_for(caplog, since, result)
            assert len(lines) == 1, (name, [r.getMessage() for r in lines])
            assert lines[0].levelno >= logging.WARNING

        # ApiVersions with a version we do not know: UNSUPPORTED_VERSION in the v0 layout,
        # listing what we do support, and the connection stays usable.
        result = exchange(broker.port, framed(header(18, 99, 21)) + framed(header(18, 0, 22)))
        [(corr1, body1), (corr2, body2)] = result.responses()
        assert (corr1, corr2) == (21, 22)
        assert struct.unpack_from(">h", body1)[0] == UNSUPPORTED_VERSION
        assert struct.unpack_from(">h", body2)[0] == 0
        assert struct.unpack_from(">i", body1, 2)[0] == len(handlers.REGISTRY)

        # A well-formed Produce whose batch fails its CRC: CORRUPT_MESSAGE, nothing stored.
        batch = bytearray(build_batch([Record(b"k", b"v", 1000)]))
        batch[-1] ^= 0xFF
        produce = encode_request(0, 7, 31, {
            "transactional_id": None, "acks": -1, "timeout": 5000,
            "topic_data": [{"name": "good", "partition_data": [
                {"index": 0, "records": bytes(batch)}]}],
        })
        [(corr, body)] = exchange(broker.port, produce).responses()
        assert corr == 31
        # v7 body: topics[1] name(str) partitions[1] index(i32) error_code(i16) ...
        name_len = struct.unpack_from(">h", body, 4)[0]
        pos = 6 + name_len + 4
        index, error = struct.unpack_from(">ih", body, pos)
        assert (index, error) == (0, CORRUPT_MESSAGE)

        # A seeded fuzz over every registered API: random bodies after a valid header.
        rng = random.Random(1234)
        for i in range(150):
            key = rng.choice(sorted(handlers.REGISTRY))
            spec = handlers.REGISTRY[key]
            version = rng.randint(spec.min_version, spec.max_version)
            body = rng.randbytes(rng.randint(0, 40))
            since = len(caplog.records)
            result = exchange(broker.port, framed(header(key, version, 1000 + i) + body))
            for corr, _body in result.responses():
                assert corr == 1000 + i
            lines = lines_for(caplog, since, result)
            assert len(lines) <= 1, (key, version, body)

        # Mutations of valid requests (every registered API and version): overwritten bytes,
        # huge counts and lengths, cut-off tails.
        for i, (key, version) in enumerate(
            (k, v) for k, spec in sorted(handlers.REGISTRY.items())
            for v in range(spec.min_version, spec.max_version + 1)
        ):
            valid = encode_request(key, version, 5000 + i, {})
            body_start = 4 + len(header(key, version, 0))
            for _ in range(3):
                frame = bytearray(valid)
                if len(frame) > body_start:
                    at = rng.randrange(body_start, len(frame))
                    frame[at : at + 4] = rng.choice(
                        [b"\x7f\xff\xff\xff", b"\xff\xff\xff\x0f", rng.randbytes(4)])
                frame = frame[: rng.randint(body_start - 4, len(frame))]
                struct.pack_into(">i", frame, 0, len(frame) - 4)
                since = len(caplog.records)
                result = exchange(broker.port, bytes(frame))
                lines = lines_for(caplog, since, result)
                assert len(lines) <= 1, (key, version, bytes(frame))

        progress = len(good.received)
        wait_until(lambda: len(good.received) >= progress + 3 or good.error, 30,
                   message="good client after the bad input")
    finally:
        good.stop_event.set()
        good.join(30)
    assert good.error is None, good.error
    assert good.received == good.sent[: len(good.received)]
    assert good.received == [f"good-{i}".encode() for i in range(len(good.received))]
    # Still answering ApiVersions with every registered API.
    assert api_versions_v0(broker.port) == handlers.supported_versions()
