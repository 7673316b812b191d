"""The offset-commit metadata we write and read is Kafka Streams' own: what
streams/processor/commit_metadata.py encodes, Kafka Streams 4.4's ``TopicPartitionMetadata``
decodes to the same partition time and processor metadata, and the other way round; what
Kafka cannot read, we cannot either. The oracle is Kafka's codec class itself
(java/CommitMetadataCodec.java), in one JVM for the module.
"""

from __future__ import annotations

import base64
import struct
import subprocess
from collections.abc import Iterator

import pytest
from helpers import reference_unavailable

from streams.processor import commit_metadata

from . import kafka
from .dsl_runner import compile_java

SOURCE = kafka.HERE / "java" / "CommitMetadataCodec.java"

CASES: list[tuple[int, dict[str, int]]] = [
    (-1, {}),
    (0, {}),
    (1_795_786_683_200, {}),
    (1_795_786_683_200, {"KSTREAM-AGGREGATE-STATE-STORE-0000000001": 1_795_786_682_000}),
    (42, {"cm-counts": -1, "b": 9_223_372_036_854_775_807, "a": -9_223_372_036_854_775_808}),
    (7, {"ünïcødé-store": 3}),
]


class Codec:
    def __init__(self) -> None:
        classes = compile_java(SOURCE, kafka.CACHE / "commit-metadata-codec")
        self.proc = subprocess.Popen(
            ["java", *kafka.JAVA_OPTS, "-cp", f"{classes}:{kafka.LIBS}/*", "CommitMetadataCodec"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8")

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().rstrip("\n")

    def encode(self, partition_time: int, metadata: dict[str, int]) -> str:
        pairs = "".join(f" {k} {v}" for k, v in metadata.items())
        return self.ask(f"E {partition_time}{pairs}")

    def decode(self, text: str, keys: list[str]) -> tuple[int, dict[str, int | None]]:
        time_, *values = self.ask(" ".join(["D", text.encode().hex(), *keys])).split(" ")
        return int(time_), {k: None if v == "null" else int(v)
                            for k, v in zip(keys, values, strict=True)}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def codec() -> Iterator[Codec]:
    reason = reference_unavailable("Kafka Streams' codec")
    if reason:
        pytest.skip(reason)
    instance = Codec()
    try:
        yield instance
    finally:
        instance.close()


@pytest.mark.parametrize("partition_time,metadata", CASES)
def test_kafka_streams_reads_what_we_commit(codec, partition_time, metadata) -> None:
    ours = commit_metadata.encode(partition_time, metadata)
    assert codec.decode(ours, [*metadata, "absent"]) == (
        partition_time, {**metadata, "absent": None})
    if len(metadata) <= 1:  # same bytes (Kafka's order of several keys is its HashMap's)
        assert ours == codec.encode(partition_time, metadata)


@pytest.mark.parametrize("partition_time,metadata", CASES)
def test_we_read_what_kafka_streams_commits(codec, partition_time, metadata) -> None:
    decoded, problem = commit_metadata.decode(codec.encode(partition_time, metadata))
    assert problem is None
    assert decoded == commit_metadata.TopicPartitionMetadata(partition_time, metadata)


def _raw(data: bytes) -> str:
    return base64.b64encode(data).decode()


# (string, whether Kafka logs a WARN for it: "Unsupported offset metadata ...")
ODD_STRINGS = [
    ("not metadata at all!", True),  # another client's free text
    ("{\"app\": \"x\"}", True),
    (_raw(b"\x00"), True),  # version 0
    (_raw(b"\x03" + struct.pack(">q", 5)), True),  # a version from the future
    (_raw(b"\x02\x00\x01"), True),  # cut inside the partition time
    (_raw(b"\x02" + struct.pack(">q", 77) + struct.pack(">ii", 1, 50) + b"short"), True),
    (_raw(b"\x02" + struct.pack(">q", 78) + struct.pack(">ii", 1, -3)), True),
    (_raw(b"\x01" + struct.pack(">q", 79) + b"trailing bytes"), False),  # v1: time only
    (_raw(b"\x02" + struct.pack(">q", 80)), False),  # no map
    (_raw(b"\x01" + struct.pack(">q", 81) + b"x").rstrip("="), False),  # unpadded base64
    ("AggAAAAAAAAAUA", True),  # unpadded: a time, then one byte of a map
]


@pytest.mark.parametrize("text,warns", ODD_STRINGS)
def test_odd_strings_read_as_kafka_streams_reads_them(codec, text, warns) -> None:
    kafka_time, kafka_meta = codec.decode(text, ["k"])
    decoded, problem = commit_metadata.decode(text)
    assert decoded.partition_time == kafka_time
    assert decoded.processor_metadata == {}
    assert kafka_meta == {"k": None}
    # We say why where Kafka logs its WARN (the task then logs it once for the partition).
    assert (problem is not None) == warns, problem
