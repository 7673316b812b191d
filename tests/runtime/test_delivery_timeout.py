"""The stream thread's producer keeps a batch for ``delivery.timeout.ms`` (KIP-91), and under
at_least_once a batch it finally gives up on goes to the production exception handler before
any offset is committed.

aiokafka gives up on a batch once it is older than ``request.timeout.ms`` (40 s by default)
while Kafka's producer retries it for ``delivery.timeout.ms`` (120 s). On a 3-node cluster whose
nodes were all down for a 30 s outage (soak seed 622003, suppress under at_least_once) the
batch of window-output-0 holding three suppressed finals expired at 40 s while the suppress
buffer's changelog batch got through; the thread rejoined, the input replayed onto state that
had already emitted those windows, and the finals were never written. Here the broker is down
for longer than ``request.timeout.ms`` but shorter than ``delivery.timeout.ms``: every record
must arrive. Then down for longer than ``delivery.timeout.ms``: the commit must stop (handler
FAIL, the default) without committing the input offsets, or drop the batch (CONTINUE) and
commit.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.admin import NewTopic
from aiokafka.errors import KafkaTimeoutError

from streams.kafka import clients
from streams.kafka.batching import RecordCollector
from streams.processor.errors import ErrorHandling, HandlerFailedError, HandlerResponse
from streams.runtime.committer import Committer
from streams.runtime.config import StreamsConfig
from streams.runtime.generation import build_producer
from streams.runtime.guarantee import AT_LEAST_ONCE

from .kafka_io import read_all

REQUEST_TIMEOUT_MS = 1_000


async def _create_topic(bootstrap: str, topic: str) -> None:
    settings = {"bootstrap_servers": bootstrap}
    admin = clients.admin(settings)
    await clients.start(admin, settings)
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()


def _producer(bootstrap: str, delivery_timeout_ms: int) -> Any:
    config = StreamsConfig.from_mapping({
        "application.id": "delivery-timeout", "bootstrap.servers": bootstrap,
        "request.timeout.ms": REQUEST_TIMEOUT_MS,
        "producer.delivery.timeout.ms": delivery_timeout_ms})
    return build_producer(config.client_kwargs("producer"), AT_LEAST_ONCE, "unused",
                          config.max_batch_size, config.transaction_timeout_ms)


async def _outage(broker: Any, seconds: float) -> None:
    """Stop the broker, keep it down for ``seconds`` (the fault itself), start it again on
    the same port and data."""
    await asyncio.to_thread(broker.stop)
    await asyncio.sleep(seconds)
    await asyncio.to_thread(broker.start)


def test_records_survive_an_outage_longer_than_the_request_timeout(broker) -> None:
    sent = [b"before"]

    async def run() -> None:
        await _create_topic(broker.bootstrap, "delivery-out")
        producer = _producer(broker.bootstrap, 60_000)
        await producer.start()
        collector = RecordCollector(producer, {"delivery-out": 1})
        try:
            collector.send("delivery-out", b"k", sent[0], 1, (), None)
            await collector.flush()
            await collector.wait_delivered()
            await asyncio.to_thread(broker.stop)
            down = time.monotonic()
            # Batches handed over while the broker is away: the first waits in the producer,
            # the next one waits for the partition's queue, longer than request.timeout.ms.
            flush: asyncio.Future[None] | None = None
            for i in range(3):
                sent.append(f"during-{i}".encode())
                collector.send("delivery-out", b"k", sent[-1], 2 + i, (), None)
                flush = asyncio.ensure_future(collector.flush())
                await asyncio.wait({flush}, timeout=1.0)
                if not flush.done():
                    break  # waiting for the queue: the outage goes on meanwhile
            while time.monotonic() - down < 4 * REQUEST_TIMEOUT_MS / 1000:
                await asyncio.sleep(0.2)  # the fault: down for four request timeouts
            await asyncio.to_thread(broker.start)
            assert flush is not None
            await flush
            await producer.flush()
            await collector.wait_delivered()
        finally:
            await producer.stop()

    asyncio.run(run())
    values = [value for _key, value in _records(broker.bootstrap)]
    assert sorted(set(values)) == sorted(sent)


def _records(bootstrap: str) -> list[tuple[bytes, bytes]]:
    return [(r.key, r.value) for r in read_all(bootstrap, "delivery-out",
                                                isolation="read_uncommitted", timeout=10)]


class _Consumer:
    """What the at_least_once commit calls on the consumer: records the offsets."""

    def __init__(self) -> None:
        self.commits: list[dict[Any, tuple[int, str]]] = []

    async def commit(self, offsets: dict[Any, tuple[int, str]]) -> None:
        self.commits.append(offsets)


def _committer(producer: Any, collector: RecordCollector, consumer: _Consumer,
               handler: str) -> Committer:
    task = SimpleNamespace(flush=lambda: None, consumed={("delivery-in", 0): 7},
                           committed_metadata=lambda tp: "", processor_metadata_changed=False)
    tasks = SimpleNamespace(commit_stores=lambda: None, committed={}, tasks={},
                            running=lambda: [("0_0", task)])
    return Committer("delivery-timeout", AT_LEAST_ONCE, tasks, consumer, producer, collector,
                     set(), 30_000, None, ErrorHandling(production=handler))


@pytest.mark.parametrize("handler", ["log_and_fail", "log_and_continue"])
def test_a_batch_undelivered_past_the_delivery_timeout_goes_to_the_handler(
        broker, handler: str) -> None:
    async def run() -> _Consumer:
        await _create_topic(broker.bootstrap, "delivery-out")
        producer = _producer(broker.bootstrap, 2 * REQUEST_TIMEOUT_MS)
        await producer.start()
        collector = RecordCollector(producer, {"delivery-out": 1})
        consumer = _Consumer()
        committer = _committer(producer, collector, consumer, handler)
        try:
            collector.send("delivery-out", b"k", b"before", 1, (), None)
            await collector.flush()
            await collector.wait_delivered()
            await asyncio.to_thread(broker.stop)
            collector.send("delivery-out", b"k", b"lost", 2, (), None)
            if handler == "log_and_fail":
                with pytest.raises(HandlerFailedError, match="delivery-out-0"):
                    await committer.commit()
            else:
                await committer.commit()
        finally:
            await asyncio.to_thread(broker.start)
            await producer.stop()
        return consumer

    consumer = asyncio.run(run())
    if handler == "log_and_fail":
        assert consumer.commits == []  # the input offsets stay uncommitted
    else:
        assert [{(tp.topic, tp.partition): o for tp, o in c.items()}
                for c in consumer.commits] == [{("delivery-in", 0): (7, "")}]
    assert [value for _key, value in _records(broker.bootstrap)] == [b"before"]


def _raises(context: Any, record: Any, exc: BaseException) -> Any:
    raise KeyError("oops")


@pytest.mark.parametrize(("answer", "refused"), [
    (lambda c, r, e: "Continue", None),
    (lambda c, r, e: HandlerResponse.RESUME, None),
    (_raises, "the production exception handler itself failed on 3 undelivered record(s) for "
              "out-1 (KeyError('oops')); original error KafkaTimeoutError"),
    (lambda c, r, e: "maybe", "the production exception handler returned 'maybe' for 3 "
                              "undelivered record(s) for out-1; expected a HandlerResponse"),
    (lambda c, r, e: None, "returned None for 3 undelivered record(s) for out-1"),
    (lambda c, r, e: "fail", "3 record(s) for out-1 were not delivered (KafkaTimeoutError: "
                             "KafkaTimeoutError); the production exception handler said FAIL"),
    # A batch has no source record to dead-letter.
    (lambda c, r, e: HandlerResponse.DEAD_LETTER, "handler said DEAD_LETTER"),
], ids=["continue-by-name", "resume", "raises", "unknown-name", "none", "fail", "dead-letter"])
def test_an_undelivered_batch_is_put_to_the_handler_as_a_record_is(answer: Any,
                                                                   refused: str | None) -> None:
    """The committer asks the production exception handler the way a task does for a record
    (ErrorHandling.respond): answers taken by name, and a handler that raises or answers
    nonsense fails the thread (HandlerFailedError: offsets stay uncommitted) naming the
    batch."""
    committer = _committer(None, None, _Consumer(), answer)  # type: ignore[arg-type]
    if refused is None:
        committer._delivery_failed(("out", 1), 3, KafkaTimeoutError())  # noqa: SLF001
        return
    with pytest.raises(HandlerFailedError) as failure:
        committer._delivery_failed(("out", 1), 3, KafkaTimeoutError())  # noqa: SLF001
    assert refused in str(failure.value)


def test_delivery_timeout_is_honoured_or_refused_by_name() -> None:
    def producer_kwargs(props: dict[str, Any]) -> dict[str, Any]:
        return StreamsConfig.from_mapping({"application.id": "a", **props}
                                          ).client_kwargs("producer")

    assert producer_kwargs({})["delivery_timeout_ms"] == 120_000  # Kafka's default
    assert producer_kwargs({"delivery.timeout.ms": "90000"})["delivery_timeout_ms"] == 90_000
    assert producer_kwargs({"producer.delivery.timeout.ms": 50_000,
                            "request.timeout.ms": 20_000})["delivery_timeout_ms"] == 50_000
    # raised to linger.ms + request.timeout.ms when not set, as Kafka's producer does
    assert producer_kwargs({"request.timeout.ms": 150_000})["delivery_timeout_ms"] == 150_000
    for props, named in [({"producer.delivery.timeout.ms": 1_000}, "delivery.timeout.ms"),
                         ({"retries": 3}, "retries"), ({"producer.retries": 3}, "retries"),
                         ({"consumer.delivery.timeout.ms": 1}, "consumer.delivery.timeout.ms")]:
        with pytest.raises(ValueError, match=named):
            producer_kwargs(props)
