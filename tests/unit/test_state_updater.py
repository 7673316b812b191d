"""The state updater restores changelogs in the background: the event loop stays free for
other work while it runs, a task revoked mid-restore is never touched again, and restoration
resumes where a checkpoint says."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaProducer
from helpers import create_topics

from streams.processor.api import TaskId
from streams.runtime.guarantee import AT_LEAST_ONCE, EXACTLY_ONCE_V2
from streams.runtime.restore import ChangelogState
from streams.runtime.state_updater import StateUpdater

CHANGELOG = "app-store-changelog"
RECORDS = 20_000


class RecordingStore:
    def __init__(self) -> None:
        self.data: dict[bytes, bytes | None] = {}
        self.restored = 0
        self.flushed = False
        self.closed = False

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        assert not self.closed, "restored into a closed store"
        self.data[key] = value
        self.restored += 1

    def flush(self) -> None:
        self.flushed = True


def _fill(bootstrap: str) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await producer.start()
        try:
            for i in range(RECORDS):
                for partition in (0, 1):
                    await producer.send(CHANGELOG, b"v%d" % i, key=b"k%d" % (i % 500),
                                        partition=partition)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


def _state(store: RecordingStore, partition: int, start: int | None = None) -> ChangelogState:
    state = ChangelogState()
    state.stores[(CHANGELOG, partition)] = store
    state.start[(CHANGELOG, partition)] = start
    return state


def test_restores_in_the_background_and_forgets_removed_tasks(broker) -> None:
    create_topics(broker.bootstrap, {CHANGELOG: 2})
    _fill(broker.bootstrap)

    async def run() -> None:
        seen: list[tuple[int, list[dict[str, object]]]] = []

        class Progress:
            """Reads progress() after each restored batch of task 0_0 (what /instance
            reports for a restoring task)."""

            def on_restore_start(self, *args: object) -> None: ...
            def on_restore_end(self, *args: object) -> None: ...

            def on_batch_restored(self, tp: object, store: str, last: int, count: int) -> None:
                if getattr(tp, "partition", None) == 0:
                    seen.append((last, updater.progress(TaskId(0, 0))))

        updater = StateUpdater({"bootstrap_servers": broker.bootstrap}, AT_LEAST_ONCE,
                               restore_listener=Progress())
        kept, revoked, resumed = RecordingStore(), RecordingStore(), RecordingStore()
        try:
            updater.add(TaskId(0, 0), _state(kept, 0))
            updater.add(TaskId(0, 1), _state(revoked, 1))
            ticks = 0
            while revoked.restored == 0:  # the loop turns while the updater works
                ticks += 1
                assert ticks < 60_000 and updater.failure is None, "restoration never started"
                await asyncio.sleep(0.001)
            updater.remove(TaskId(0, 1))
            revoked.closed = True  # any later restore into it fails the test
            assert not updater.restoring(TaskId(0, 1))
            # A task with a checkpoint restores only the tail.
            updater.add(TaskId(1, 1), _state(resumed, 1, start=RECORDS - 100))
            done: list[TaskId] = []
            for _ in range(3000):
                done += updater.drain_restored()
                if len(done) == 2:
                    break
                ticks += 1
                await asyncio.sleep(0.01)
            assert sorted(done) == [TaskId(0, 0), TaskId(1, 1)]
            assert updater.failure is None
            assert ticks > 0
            assert kept.restored == RECORDS and kept.flushed
            assert kept.data[b"k499"] == b"v%d" % (RECORDS - 1)
            assert resumed.restored == 100 and resumed.flushed
            # mid-restore: every record up to the batch's last applied, heading for the end
            # (the next offset moves once the whole fetch is applied)
            assert seen and seen[-1][0] == RECORDS - 1
            for last, [row] in seen:
                assert (row["topic"], row["partition"], row["end"]) == (CHANGELOG, 0, RECORDS)
                assert row["applied"] == last + 1 and row["position"] <= row["applied"]
            assert updater.progress(TaskId(0, 0)) == []  # restored: no longer reported
            # a standby follows the changelog; its progress is its position and the end
            follower = RecordingStore()
            updater.add(TaskId(2, 0), _state(follower, 0), standby=True)
            for _ in range(3000):
                rows = updater.progress(TaskId(2, 0))
                if rows and rows[0]["position"] == RECORDS and rows[0]["end"] == RECORDS:
                    break
                await asyncio.sleep(0.01)
            assert rows == [{"store": "", "topic": CHANGELOG, "partition": 0,
                             "position": RECORDS, "end": RECORDS, "applied": RECORDS}]
            assert follower.restored == RECORDS
        finally:
            await updater.close()

    asyncio.run(run())


def test_a_task_without_logged_stores_is_restored_at_once(broker) -> None:
    async def run() -> None:
        updater = StateUpdater({"bootstrap_servers": broker.bootstrap}, EXACTLY_ONCE_V2)
        try:
            updater.add(TaskId(2, 0), ChangelogState())
            assert updater.drain_restored() == [TaskId(2, 0)]
        finally:
            await updater.close()

    asyncio.run(run())
