"""The Connect fault harness's verdict on a DataGen connector created by a fault
(``connect_harness._judge_side``), against a real broker.

An order id below its task's committed source offset that is not in the topic is lost for
good: a restarted task resumes after it. Ids past the committed offsets were never generated
(the task was stopped first): the run ended early, nothing was lost. The harness must tell the
two apart, and offsets written in an aborted transaction must not count.
"""

from __future__ import annotations

import asyncio
import json

from aiokafka import AIOKafkaProducer
from helpers import create_topics
from runtime.kafka_io import produce

from .connect_harness import SIDE_RECORDS, SIDE_TASKS, _judge_side

OFFSETS = "side-offsets"


def _write(bootstrap: str, name: str, ids: list[int], counts: dict[int, int]) -> None:
    """``ids`` into the connector's topic, then each task's source offset (DataGen's
    ``{"count": n}`` under Kafka Connect's key ``["<connector>", {"task": t}]``)."""
    create_topics(bootstrap, {name: 1, OFFSETS: 1})
    produce(bootstrap, name, [(str(i).encode(), json.dumps({"orderid": i}).encode(), 0)
                              for i in ids])
    produce(bootstrap, OFFSETS, [(json.dumps([name, {"task": t}]).encode(),
                                  json.dumps({"count": c}).encode(), 0)
                                 for t, c in counts.items()])


def _abort_offsets(bootstrap: str, name: str, counts: dict[int, int]) -> None:
    """Source offsets sent in a transaction that is then aborted (a fenced zombie's)."""
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="zombie")
        await producer.start()
        try:
            await producer.begin_transaction()
            for t, c in counts.items():
                await producer.send_and_wait(OFFSETS, json.dumps({"count": c}).encode(),
                                             key=json.dumps([name, {"task": t}]).encode())
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())


def _task_ids(task: int, count: int) -> list[int]:
    return [k * SIDE_TASKS + task + 1 for k in range(count)]


def test_a_complete_connector_passes(broker) -> None:  # noqa: ANN001 - the broker fixture
    _write(broker.bootstrap, "side-a", list(range(1, SIDE_RECORDS + 1)),
           {0: SIDE_RECORDS // 2, 1: SIDE_RECORDS // 2})
    assert _judge_side("side-a", broker.bootstrap, True, OFFSETS) == ""


def test_records_past_the_committed_offsets_were_never_generated(broker) -> None:  # noqa: ANN001
    """The CI failure's shape: a task stopped before its last records; its committed offset
    stops exactly where its records stop. An aborted transaction's offsets beyond that (a
    fenced zombie's) do not count."""
    ids = sorted(_task_ids(0, 139) + _task_ids(1, 138))
    _write(broker.bootstrap, "side-b", ids, {0: 139, 1: 138})
    _abort_offsets(broker.bootstrap, "side-b", {0: 150, 1: 150})
    verdict = _judge_side("side-b", broker.bootstrap, True, OFFSETS)
    assert verdict.startswith("side-b: 23 of 300 order ids missing, never generated"), verdict
    assert "LOST" not in verdict


def test_records_below_the_committed_offsets_are_lost(broker) -> None:  # noqa: ANN001
    """Offsets committed without their records: the loss exactly-once must never allow."""
    ids = [i for i in range(1, SIDE_RECORDS + 1) if i not in (101, 103, 104)]
    _write(broker.bootstrap, "side-c", ids, {0: SIDE_RECORDS // 2, 1: SIDE_RECORDS // 2})
    verdict = _judge_side("side-c", broker.bootstrap, True, OFFSETS)
    assert verdict.startswith("side-c: 3 order ids LOST: their source offsets were committed "
                              "without them (101, 103, 104;"), verdict


def test_duplicates_fail_only_exactly_once(broker) -> None:  # noqa: ANN001
    ids = [*range(1, SIDE_RECORDS + 1), 7]
    _write(broker.bootstrap, "side-d", ids, {0: SIDE_RECORDS // 2, 1: SIDE_RECORDS // 2})
    assert _judge_side("side-d", broker.bootstrap, True, OFFSETS) == \
        "side-d: 1 duplicate order ids under exactly-once"
    assert _judge_side("side-d", broker.bootstrap, False, OFFSETS) == ""
