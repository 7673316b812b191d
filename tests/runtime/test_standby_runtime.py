"""Standby replicas (``num.standby.replicas=1``), two instances in two processes.

Each instance runs one counting task and keeps a standby of the other's. When one instance is
killed (SIGKILL), the survivor promotes its standby: the restore listener shows that it
restores at most a short tail of the changelog, not the whole of it, and the counts that
follow go on exactly (exactly_once_v2: per key 1, 2, ..., n).
"""

from __future__ import annotations

import asyncio
import json
import signal

from aiokafka import AIOKafkaConsumer, TopicPartition
from helpers import wait_until

from .kafka_io import create_topics, read_all
from .test_crash_runtime import App, CountingInput

CHANGELOG = "crash-app-crash-store-changelog"
CHUNK = 1500


def events(app: App, prefix: str) -> list[dict]:
    return [json.loads(line[len(prefix) + 1:]) for line in app.output().splitlines()
            if line.startswith(prefix + " {")]


def changelog_ends(bootstrap: str) -> dict[int, int]:
    async def run() -> dict[int, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            tps = [TopicPartition(CHANGELOG, p) for p in range(2)]
            return {tp.partition: end for tp, end in (await consumer.end_offsets(tps)).items()}
        finally:
            await consumer.stop()
    return asyncio.run(run())


def test_a_standby_is_promoted_and_restores_only_the_tail(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {"crash-input": 2})
    counting = CountingInput(broker.bootstrap, seed=3, chunk=CHUNK)
    produce_chunk, caught_up = counting.produce_chunk, counting.caught_up

    config = {"num.standby.replicas": 1}
    apps = [App(broker.bootstrap, "exactly_once_v2", tmp_path / f"state-{i}",
                tmp_path / f"app-{i}.log", config=config) for i in range(2)]
    victim, survivor = apps
    try:
        for app in apps:
            wait_until(app.running, timeout=60, message="both instances RUNNING")
        produce_chunk()
        read_all(broker.bootstrap, "crash-counts", until=caught_up, timeout=120, quiet=0)
        ends = changelog_ends(broker.bootstrap)

        def standby_caught_up() -> bool:
            # the survivor's standby has loaded its partition's changelog up to its last
            # record (the commit marker after it is the end offset's predecessor)
            loaded = [e for e in events(survivor, "STANDBY") if e["event"] == "batch_loaded"]
            return any(e["batch_end"] >= ends[e["partition"]] - 2 for e in loaded)

        wait_until(standby_caught_up, timeout=60, message="the survivor's standby caught up")
        standby_parts = {e["partition"] for e in events(survivor, "STANDBY")
                         if e["event"] == "update_start"}
        assert len(standby_parts) == 1, events(survivor, "STANDBY")
        (promoted,) = standby_parts
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(30)

        def was_promoted() -> bool:
            return any(e["event"] == "update_suspended" and e["reason"] == "PROMOTED"
                       for e in events(survivor, "STANDBY"))

        wait_until(was_promoted, timeout=60, message="the standby promoted")
        produce_chunk()
        records = read_all(broker.bootstrap, "crash-counts", until=caught_up, timeout=120,
                           quiet=2.0)
    finally:
        for app in apps:
            if app.proc.poll() is None:
                app.proc.send_signal(signal.SIGTERM)
        for app in apps:
            app.proc.wait(60)
    (suspended,) = [e for e in events(survivor, "STANDBY")
                    if e["event"] == "update_suspended" and e["reason"] == "PROMOTED"]
    assert suspended["partition"] == promoted and suspended["offset"] >= ends[promoted] - 2
    restores = [e for e in events(survivor, "RESTORE") if e["event"] == "restore_start"
                and e["partition"] == promoted]
    # The victim wrote at most a few transactions after the standby's last batch: a tail.
    # Without the standby the restore would start at the changelog's beginning (about
    # CHUNK / 2 records for this partition).
    assert all(e["end"] - e["start"] < 50 and e["start"] >= ends[promoted] - 2
               for e in restores), restores
    wrong = counting.wrong_sequences(records)
    assert not wrong, f"duplicates or gaps (last counts, expected n): {wrong}"
