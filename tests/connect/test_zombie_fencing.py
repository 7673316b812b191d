"""The leader's fencing round (KIP-618) against a real broker: which transactional ids it fences,
when it writes the task-count record, and that a fenced producer's open transaction never shows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from helpers import create_topics

from connect.runtime.config import WorkerConfig
from connect.runtime.exactly_once import ZombieFencing, fence_producers, transactional_id


def worker(bootstrap: str) -> WorkerConfig:
    return WorkerConfig.parse({"bootstrap.servers": bootstrap, "group.id": "g",
                               "exactly.once.source.support": "enabled"})


async def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                isolation_level="read_committed", enable_auto_commit=False)
    await consumer.start()
    try:
        values: list[bytes] = []
        for _ in range(10):
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                values.extend(r.value for r in batch)
        return values
    finally:
        await consumer.stop()


def test_fence_producers_aborts_the_zombies_transaction(broker) -> None:
    create_topics(broker.bootstrap, {"out": 1})

    async def run() -> None:
        zombie = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                  transactional_id=transactional_id("g", "c", 1))
        await zombie.start()
        try:
            await zombie.begin_transaction()
            await (await zombie.send("out", b"zombie"))
            await fence_producers(worker(broker.bootstrap),
                                  [transactional_id("g", "c", i) for i in range(2)],
                                  {"request.timeout.ms": "20000", "client.id": "fencer"})
            with pytest.raises(KafkaError):
                await zombie.commit_transaction()
        finally:
            await zombie.stop()
        assert await committed_values(broker.bootstrap, "out") == []

    asyncio.run(run())


@pytest.mark.parametrize(("previous", "now", "fenced"), [
    (None, 3, []),  # first generation with exactly-once: nothing to fence, record written
    (1, 1, []),  # one task before and now: the new task's own InitProducerId fences it
    (2, 1, ["g-c-0", "g-c-1"]),
    (1, 3, ["g-c-0"]),
])
def test_fencing_round_fences_the_previous_generation(monkeypatch, previous: int | None,
                                                      now: int, fenced: list[str]) -> None:
    from connect.runtime import exactly_once

    calls: list[list[str]] = []
    written: list[tuple[str, Any]] = []

    async def fake_fence(_worker: WorkerConfig, ids: list[str],
                         overrides: dict[str, str] | None = None) -> None:
        calls.append(ids)
        assert overrides == {"request.timeout.ms": "20000"}

    monkeypatch.setattr(exactly_once, "fence_producers", fake_fence)
    state = ZombieFencing(worker("127.0.0.1:1"))
    if previous is not None:
        state.apply("tasks-fencing-c", {"task-count": previous})
    state.apply("commit-c", {"tasks": now})  # new task configs: a round is pending

    async def read_to_end() -> None:
        pass

    async def write(key: str, value: Any) -> None:
        written.append((key, value))
        state.apply(key, value)

    config = {"name": "c", "admin.override.request.timeout.ms": "20000"}
    asyncio.run(state.fence("c", now, read_to_end, write, config))
    assert calls == ([fenced] if fenced else [])
    assert written == [("tasks-fencing-c", {"task-count": now})]
    assert "c" not in state.pending
    asyncio.run(state.fence("c", now, read_to_end, write))  # nothing pending: nothing done
    assert len(written) == 1


def test_an_outdated_task_never_initializes_its_transactional_id() -> None:
    """Kafka's pre-producer check: a task whose generation is no longer current fails before
    its producer exists, so it cannot fence the newer task that uses the same id."""
    from connect.datagen import DataGenTask
    from connect.runtime.exactly_once import ExactlyOnceWorkerSourceTask
    from connect.runtime.offsets import OffsetStore
    from connect.runtime.status import State, TargetState, TaskId
    from connect.runtime.task_runner import TaskEnv

    fenced: list[str] = []
    statuses: list[Any] = []

    async def fencing(connector: str) -> None:
        fenced.append(connector)

    async def run() -> ExactlyOnceWorkerSourceTask:
        env = TaskEnv(worker("127.0.0.1:1"), "w", OffsetStore(),
                      lambda tid, status: statuses.append(status),
                      extra={"fencing": fencing, "current": lambda tid: False})
        runner = ExactlyOnceWorkerSourceTask(
            env, TaskId("c", 0), {"name": "c", "connector.class": "DataGen"},
            {"kafka.topic": "t"}, DataGenTask, TargetState.STARTED)
        runner.start()
        for _ in range(200):
            if runner.state is State.FAILED:
                break
            await asyncio.sleep(0.02)
        await runner.stop()
        return runner

    runner = asyncio.run(run())
    assert fenced == ["c"] and runner.producer is None
    assert runner.state is State.FAILED
    assert "outdated generation" in (statuses[-1].trace or "")
