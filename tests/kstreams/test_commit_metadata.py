"""A task's offset-commit metadata (streams/processor/commit_metadata.py), without a broker:
the codec, what a task takes up from it, and emit-on-close's windowed aggregations (time,
sliding, session) resumed on their persisted store by a second driver on the same state
directory, as a restarted task is by the runtime. Kafka Streams' own codec is checked against
ours in tests/reference/test_commit_metadata_diff.py; the runtime in
tests/runtime/test_commit_metadata_runtime.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from streams import (
    EmitStrategy,
    Materialized,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
)
from streams.processor import commit_metadata
from streams.testing import TopologyTestDriver

S = Serdes.string()


def test_encode_decode_round_trip() -> None:
    for partition_time, metadata in [(-1, {}), (123, {}), (5, {"a": 1, "store-ü": -7})]:
        text = commit_metadata.encode(partition_time, metadata)
        assert commit_metadata.decode(text) == (
            commit_metadata.TopicPartitionMetadata(partition_time, metadata), None)
    assert commit_metadata.decode("") == (commit_metadata.TopicPartitionMetadata(), None)


def _windowed(kind: str) -> Any:
    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde=S, value_serde=S).group_by_key()
    if kind == "time":
        windowed = grouped.windowed_by(TimeWindows.of_size_with_no_grace(10))
    elif kind == "sliding":
        windowed = grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(10))
    else:
        windowed = grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
    (windowed.emit_strategy(EmitStrategy.on_window_close())
        .count(Materialized("counts", retention=100_000))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}-{k.window.end}", v))
        .to("out", key_serde=S, value_serde=Serdes.long()))
    return builder.build()


@pytest.mark.parametrize("kind", ["time", "sliding", "session"])
@pytest.mark.parametrize("resume", [True, False])
def test_emit_on_close_resumes_after_the_finals_it_emitted(tmp_path, kind, resume) -> None:
    config = {"application.id": "cm", "state.dir": str(tmp_path)}
    with TopologyTestDriver(_windowed(kind), config) as first:
        pipe = first.create_input_topic("in", S, S)
        for ts in (10, 12, 31, 60):
            pipe.pipe_input("a", "x", ts)
        before = first.create_output_topic("out", S, Serdes.long()).read_key_values_to_list()
        (task,) = first.tasks
        committed = {("in", 0): task.committed_metadata(("in", 0))}
    assert before, "finals emitted before the restart"
    with TopologyTestDriver(_windowed(kind), config) as second:  # the store persisted
        if resume:
            second.tasks[0].resume_from_committed(committed)
        second.create_input_topic("in", S, S).pipe_input("a", "x", 61)
        after = second.create_output_topic("out", S, Serdes.long()).read_key_values_to_list()
    again = [kv for kv in after if kv in before]
    if resume:
        assert again == []
        assert second.tasks[0].stream_time == 61
    else:  # what resuming the metadata prevents: finals already out, emitted again
        assert again != []


def test_a_task_takes_up_the_largest_values_and_warns_once_per_unreadable_string(
        tmp_path, caplog) -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=S, value_serde=S).to("out")
    with TopologyTestDriver(builder.build(), {"state.dir": str(tmp_path)}) as driver:
        (task,) = driver.tasks
        with caplog.at_level(logging.WARNING, logger="streams.processor.task"):
            task.resume_from_committed({
                ("in", 0): commit_metadata.encode(50, {"a": 3, "b": 9}),
                ("in", 1): commit_metadata.encode(70, {"a": 5, "b": 1}),
                ("in", 2): "some other client's metadata",
                ("in", 3): "",
            })
        assert task.partition_time == {("in", 0): 50, ("in", 1): 70, ("in", 2): -1,
                                       ("in", 3): -1}
        assert task.stream_time == 70
        assert task.processor_metadata == {"a": 5, "b": 9}
        assert not task.processor_metadata_changed  # nothing new to commit
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and "in-2" in warnings[0], warnings
