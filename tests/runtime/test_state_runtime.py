"""State restore from the changelog, and two instances sharing (then handing over) tasks."""

from __future__ import annotations

import shutil

import pytest
from helpers import wait_until

from streams import KafkaStreams
from streams.runtime import State

from .kafka_io import create_topics, latest_by_key, produce, read_all
from .test_wordcount_runtime import config, word_count_topology


def _lines(words: list[str], base_ts: int) -> list[tuple[bytes, bytes, int]]:
    return [(f"k{i}".encode(), w.encode(), base_ts + i) for i, w in enumerate(words)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_state_restored_from_changelog_after_state_dir_deleted(broker, tmp_path,
                                                               guarantee) -> None:
    create_topics(broker.bootstrap, {"text-input": 2})
    produce(broker.bootstrap, "text-input", _lines(["a b c", "a b", "a"], 1_000))
    cfg = config(broker, tmp_path, guarantee, app_id=f"restore-{guarantee.replace('_', '-')}")
    first = KafkaStreams(word_count_topology(), cfg)
    first.start()
    try:
        read_all(broker.bootstrap, "word-counts",
                 until=lambda rs: latest_by_key(rs) == {"a": 3, "b": 2, "c": 1})
    finally:
        assert first.close(timeout=30)
    state_dir = tmp_path / "state" / cfg["application.id"]
    assert any(p.name.startswith("1_") for p in state_dir.iterdir())  # the counting tasks
    shutil.rmtree(state_dir)

    produce(broker.bootstrap, "text-input", _lines(["a c", "d"], 5_000))
    second = KafkaStreams(word_count_topology(), cfg)
    second.start()
    try:
        expected = {"a": 4, "b": 2, "c": 2, "d": 1}
        records = read_all(broker.bootstrap, "word-counts",
                           until=lambda rs: latest_by_key(rs) == expected)
        assert latest_by_key(records) == expected
        view = second.store("word-counts")
        wait_until(lambda: dict(view.all()) == expected, message="restored store")
    finally:
        assert second.close(timeout=30)


def test_two_instances_share_tasks_and_take_over(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"text-input": 4})
    words = [f"w{i % 7}" for i in range(70)]
    produce(broker.bootstrap, "text-input", _lines(words[:35], 1_000))
    base = config(broker, tmp_path, "at_least_once", app_id="shared")
    a = KafkaStreams(word_count_topology(), {**base, "state.dir": str(tmp_path / "a")})
    b = KafkaStreams(word_count_topology(), {**base, "state.dir": str(tmp_path / "b")})
    a.start()
    b.start()
    try:
        # 4 partitions x 2 sub-topologies = 8 tasks, balanced 4/4 once both joined.
        wait_until(lambda: len(a.local_task_ids()) == 4 and len(b.local_task_ids()) == 4
                   and a.state is State.RUNNING and b.state is State.RUNNING,
                   timeout=60, message="tasks spread over both instances")
        half = {f"w{i}": 5 for i in range(7)}
        read_all(broker.bootstrap, "word-counts", until=lambda rs: latest_by_key(rs) == half)
        assert a.close(timeout=30)
        wait_until(lambda: len(b.local_task_ids()) == 8 and b.state is State.RUNNING,
                   timeout=60, message="b took over every task")
        produce(broker.bootstrap, "text-input", _lines(words[35:], 9_000))
        full = {f"w{i}": 10 for i in range(7)}
        records = read_all(broker.bootstrap, "word-counts",
                           until=lambda rs: latest_by_key(rs) == full)
        assert latest_by_key(records) == full
        wait_until(lambda: dict(b.store("word-counts").all()) == full, message="b's stores")
    finally:
        a.close(timeout=30)
        assert b.close(timeout=30)
