"""The log cleaner runs on its own schedule (log.cleaner.backoff.ms), not the retention check's,
and one partition failing in maintenance never stops the others."""

from __future__ import annotations

import asyncio
import logging

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import EmbeddedBroker, wait_until

from streams.broker import maintenance
from streams.broker.records import decode_records, iter_batches

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "1024",
           "min.cleanable.dirty.ratio": "0.01"}


def values_of(broker: EmbeddedBroker, topic: str) -> list[bytes | None]:
    """Every record value of partition 0 from the log start, read on the broker's loop."""

    def read() -> list[bytes | None]:
        plog = broker.broker.topics.partition(topic, 0)
        out, offset = [], plog.log_start_offset
        while offset < plog.next_offset:
            data = plog.read(offset, 1 << 20)
            if not data:
                break
            for pos, header in iter_batches(data):
                if not header.is_control:
                    out.extend(r.value for r in decode_records(data[pos : pos + header.size]))
                offset = header.last_offset + 1
        return out

    return broker.call(read)


def produce_same_key(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
        producer.flush(15)  # one batch each, so 1 KiB segments roll
    assert producer.flush(15) == 0


def create(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, config=c)
                                       for t, c in topics.items()]).values():
        future.result(15)


@pytest.fixture
def fast_cleaner(tmp_path):
    broker = EmbeddedBroker(tmp_path / "b", log_cleaner_backoff_ms=100).start()
    yield broker
    broker.stop()


def test_compacted_topic_compacts_within_the_cleaner_backoff(fast_cleaner) -> None:
    # The retention check stays at its 5-minute default: only the cleaner's own loop can do it.
    create(fast_cleaner.bootstrap, {"dirty": COMPACT})
    produce_same_key(fast_cleaner.bootstrap, "dirty", 40)
    assert len(fast_cleaner.broker.topics.partition("dirty", 0).segments) > 2
    wait_until(lambda: len(values_of(fast_cleaner, "dirty")) < 40, 30,
               message="compaction of the closed segments")
    values = values_of(fast_cleaner, "dirty")
    assert values[-1] == b"v39"
    assert values == sorted(set(values), key=lambda v: int(v[1:]))  # order kept, no duplicates


def test_a_failing_partition_does_not_stop_the_others(broker, caplog, monkeypatch) -> None:
    caplog.set_level(logging.INFO, logger="streams.broker")
    create(broker.bootstrap, {"bad": COMPACT, "good": COMPACT,
                              "old-bad": {"segment.bytes": "1024", "retention.ms": "1"},
                              "old-good": {"segment.bytes": "1024", "retention.ms": "1"}})
    for topic in ("bad", "good", "old-bad", "old-good"):
        produce_same_key(broker.bootstrap, topic, 30)
    real_needs_cleaning, real_retention = maintenance.needs_cleaning, maintenance.apply_retention

    def needs_cleaning(plog, config, now_ms):
        if plog.directory.name == "bad-0":
            raise OSError(5, "Input/output error")
        return real_needs_cleaning(plog, config, now_ms)

    def apply_retention(plog, *args):
        if plog.directory.name == "old-bad-0":
            raise OSError(5, "Input/output error")
        return real_retention(plog, *args)

    monkeypatch.setattr(maintenance, "needs_cleaning", needs_cleaning)
    monkeypatch.setattr(maintenance, "apply_retention", apply_retention)
    since = len(caplog.records)
    for _ in range(2):  # a second pass must not log the same failure again
        asyncio.run_coroutine_threadsafe(maintenance.run_once(broker.broker),
                                         broker.loop).result(30)
    assert len(values_of(broker, "good")) < 30
    assert len(values_of(broker, "bad")) == 30
    assert broker.broker.topics.partition("old-good", 0).log_start_offset > 0
    assert broker.broker.topics.partition("old-bad", 0).log_start_offset == 0
    failures = [r for r in caplog.records[since:] if "failed" in r.getMessage()]
    assert sorted(r.getMessage().split(" (")[0] for r in failures) == [
        "compaction of bad-0 failed", "retention of old-bad-0 failed"]
    assert all(r.exc_info is None for r in caplog.records[since:])
