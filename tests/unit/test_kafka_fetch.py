"""Contract tests of streams.kafka.fetch, the range reader the Spark source is built on: exact
offset ranges of one partition with raw Fetch requests, aborted transactions filtered under
read_committed as Kafka's consumer does, ranges that start and end inside record batches,
offsets that are gone reported to the caller, settings that pickle; against the bundled broker."""

from __future__ import annotations

import asyncio
import pickle
import threading

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from helpers import create_topics, wait_until

from streams.kafka.fetch import (
    READ_UNCOMMITTED,
    OffsetClient,
    ReaderSettings,
    RecordColumns,
    read_partition,
)


def _rows(chunks: list[RecordColumns]) -> list[tuple[int, bytes | None]]:
    return [(o, v) for c in chunks for o, v in zip(c.offsets, c.values, strict=True)]


def _never_lost(what: str) -> None:
    raise AssertionError(f"unexpected loss: {what}")


def _end_offset(bootstrap: str, topic: str) -> int:
    with OffsetClient(ReaderSettings(bootstrap, isolation_level=READ_UNCOMMITTED)) as client:
        return client.latest([(topic, 0)])[(topic, 0)]


@pytest.fixture
def mixed(broker) -> str:
    """Topic ``mixed``: an aborted and a committed transaction interleaved with plain records
    (offsets 0-7, markers included), then one batch of 100 records at offsets 8-107."""
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"mixed": 1})

    async def interleave() -> None:
        plain = AIOKafkaProducer(bootstrap_servers=bootstrap)
        aborting = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aborting")
        committing = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="committing")
        for producer in (plain, aborting, committing):
            await producer.start()
        try:
            await aborting.begin_transaction()
            await aborting.send_and_wait("mixed", b"a1", partition=0)
            await plain.send_and_wait("mixed", b"b1", partition=0, headers=[("h", b"1")])
            await committing.begin_transaction()
            await committing.send_and_wait("mixed", b"c1", partition=0)
            await aborting.send_and_wait("mixed", b"a2", partition=0)
            await aborting.abort_transaction()
            await committing.send_and_wait("mixed", b"c2", partition=0)
            await committing.commit_transaction()
            await plain.send_and_wait("mixed", b"b2", partition=0)
            batch = plain.create_batch()
            for i in range(100):
                batch.append(key=str(i).encode(), value=f"x{i}".encode(), timestamp=None)
            batch.close()
            await (await plain.send_batch(batch, "mixed", partition=0))
        finally:
            for producer in (plain, aborting, committing):
                await producer.stop()

    asyncio.run(interleave())
    wait_until(lambda: _end_offset(bootstrap, "mixed") == 108, timeout=30)
    return bootstrap


def test_read_committed_skips_aborted_transactions_and_markers(mixed: str) -> None:
    # 64-byte fetches: every fetch ends inside a batch, which the reader must resume from.
    settings = ReaderSettings(mixed, max_partition_fetch_bytes=64)

    def read(start: int, end: int, isolation: str = "read_committed"
             ) -> list[tuple[int, bytes | None]]:
        chosen = ReaderSettings(mixed, isolation_level=isolation, max_partition_fetch_bytes=64)
        return _rows(list(read_partition(chosen, "mixed", 0, start, end, _never_lost, 1000)))

    assert read(0, 8) == [(1, b"b1"), (2, b"c1"), (5, b"c2"), (7, b"b2")]
    assert read(0, 8, READ_UNCOMMITTED) == [(0, b"a1"), (1, b"b1"), (2, b"c1"), (3, b"a2"),
                                            (5, b"c2"), (7, b"b2")]
    assert read(3, 6) == [(5, b"c2")]
    assert read(20, 25) == [(o, f"x{o - 8}".encode()) for o in range(20, 25)]
    assert read(5, 5) == []
    chunks = list(read_partition(settings, "mixed", 0, 0, 108, _never_lost, 30))
    assert len(_rows(chunks)) == 104
    assert [o for c in chunks for o in c.offsets] == [1, 2, 5, 7, *range(8, 108)]
    assert all(len(c) >= 30 for c in chunks[:-1])  # a chunk is at least chunk_records long
    first = chunks[0]
    assert first.headers[0] == [("h", b"1")] and first.headers[1] == []
    assert first.keys[0] is None and all(t > 0 for t in first.timestamps)
    assert first.timestamp_types[0] == 0  # CreateTime


def test_offsets_that_are_gone_go_to_on_lost(broker) -> None:
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"lossy": 1})

    async def fill_and_trim() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait("lossy", str(i).encode(), partition=0)
        finally:
            await producer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.delete_records({TopicPartition("lossy", 0): RecordsToDelete(6)})
        finally:
            await admin.close()

    asyncio.run(fill_and_trim())
    settings = ReaderSettings(bootstrap)
    lost: list[str] = []
    rows = _rows(list(read_partition(settings, "lossy", 0, 2, 10, lost.append, 100)))
    assert rows == [(o, str(o).encode()) for o in range(6, 10)]
    assert lost == ["offsets 2 to 5 of lossy-0 were to be read but the log now starts at 6"]

    class Refused(Exception):
        pass

    def refuse(what: str) -> None:
        raise Refused(what)

    with pytest.raises(Refused, match="offsets 0 to 5 of lossy-0"):
        list(read_partition(settings, "lossy", 0, 0, 10, refuse, 100))


def test_offset_client_answers_planning_calls_on_one_thread(mixed: str) -> None:
    def threads() -> int:
        return sum(t.name == "plan-offsets" for t in threading.enumerate())

    before = threads()
    with OffsetClient(ReaderSettings(mixed), "plan-offsets") as client:
        assert client.cluster()["mixed"] == [0]
        assert client.earliest([("mixed", 0)]) == {("mixed", 0): 0}
        assert client.latest([("mixed", 0)]) == {("mixed", 0): 108}  # the last stable offset
        assert client.latest([]) == {}
        assert threads() == before + 1
        copy = pickle.loads(pickle.dumps(client))  # a live client pickles as its settings
        assert copy.settings == client.settings and copy.thread_name == "plan-offsets"
    assert threads() == before


def test_settings_pickle_and_keep_secrets_out_of_the_repr() -> None:
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="u" password="very-secret";')
    settings = ReaderSettings("h:1", security=(("security.protocol", "SASL_PLAINTEXT"),
                                               ("sasl.mechanism", "PLAIN"),
                                               ("sasl.jaas.config", jaas)))
    assert pickle.loads(pickle.dumps(settings)) == settings
    assert "very-secret" not in repr(settings)
    assert settings.security_kwargs()["sasl_plain_password"] == "very-secret"
