"""Application reset + clean_up: two instances (child processes) count the input; after
`streams app reset` and `KafkaStreams.clean_up()` on each instance's state directory, a restart
recomputes every count from scratch (not doubled on top of the old state, not skipped)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from helpers import RECENT_TS, create_topics, list_topics, wait_until

from streams import KafkaStreams
from streams.runtime import State
from streams.runtime.app import IllegalStateError
from streams.runtime.statedir import StateDirLockedError

from .ops_app import INPUT, OUTPUT, config, topology
from .procs import ROOT, AppProcess, produce

APP = "reset-app"
KEYS = {f"k{i:02d}": i % 3 + 1 for i in range(30)}


def read_output(bootstrap: str) -> list[tuple[str, int]]:
    async def run() -> list[tuple[str, int]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            await consumer._client.force_metadata_update()  # noqa: SLF001
            parts = consumer.partitions_for_topic(OUTPUT) or set()
            tps = [TopicPartition(OUTPUT, p) for p in sorted(parts)]
            if not tps:
                return []
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            out = []
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    out.extend((r.key.decode(), int.from_bytes(r.value, "big", signed=True))
                               for r in records)
            return out
        finally:
            await consumer.stop()
    return asyncio.run(run())


def latest(records: list[tuple[str, int]]) -> dict[str, int]:
    return dict(records)


def topics(bootstrap: str) -> set[str]:
    return set(list_topics(bootstrap))


def reset_cli(bootstrap: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streams.cli.main", "app", "reset", "--application-id", APP,
         "--input-topics", INPUT, "--bootstrap-servers", bootstrap, *extra],
        capture_output=True, text=True, timeout=120, cwd=ROOT)


def run_two(bootstrap: str, tmp_path, tag: str) -> list[AppProcess]:
    return [AppProcess(bootstrap, tmp_path / name, "", APP,
                       log=tmp_path / f"{name}-{tag}.log").start() for name in ("a", "b")]


def test_reset_and_clean_up_recompute_from_scratch(broker, tmp_path) -> None:
    bs = broker.bootstrap
    create_topics(bs, {INPUT: 2})
    produce(bs, INPUT, [(k.encode(), b"x", RECENT_TS + n) for k, c in KEYS.items()
                        for n in range(c)])
    apps = run_two(bs, tmp_path, "first")
    try:
        wait_until(lambda: latest(read_output(bs)) == KEYS, timeout=90,
                   message="the first run's counts")
        # while an instance runs, the reset refuses and names the reason
        running = reset_cli(bs)
        assert running.returncode == 1 and "active member" in running.stderr
        assert "Traceback" not in running.stderr
    finally:
        for app in apps:
            app.stop()
    first = read_output(bs)
    internal = {t for t in topics(bs) if t.startswith(APP + "-")}
    assert internal and all(t.endswith(("-changelog", "-repartition")) for t in internal)

    dry = reset_cli(bs, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "----Dry run----" in dry.stdout
    assert f"Topic: {INPUT} Partition: 0 Offset: 0" in dry.stdout
    assert all(t in dry.stdout for t in internal)
    assert internal <= topics(bs)  # nothing deleted
    one = sorted(internal)[0]
    subset = reset_cli(bs, "--dry-run", "--internal-topics", one)
    assert subset.returncode == 0 and f"Deleting specified internal topics [{one}]" in subset.stdout
    foreign = reset_cli(bs, "--dry-run", "--internal-topics", INPUT)
    assert foreign.returncode == 1 and "not internal topics" in foreign.stderr
    assert "Traceback" not in foreign.stderr

    done = reset_cli(bs)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not internal & topics(bs), timeout=30, message="internal topics gone")

    # clean_up: refused while running, removes the task directories when stopped
    for name in ("a", "b"):
        app = KafkaStreams(topology(), config(bs, str(tmp_path / name), None, APP))
        state = tmp_path / name / APP
        assert any(p.name[0].isdigit() for p in state.iterdir())
        app.clean_up()
        assert not any(p.name[0].isdigit() for p in state.iterdir())

    apps = run_two(bs, tmp_path, "second")
    try:
        # recomputed: a second full sequence of counts, ending at the same totals
        wait_until(lambda: len(read_output(bs)) >= 2 * len(first) and
                   latest(read_output(bs)) == KEYS, timeout=90,
                   message="the counts recomputed after the reset")
    finally:
        for app in apps:
            app.stop()
    second = read_output(bs)[len(first):]
    assert Counter(k for k, _ in second) == Counter(k for k, _ in first)
    assert max(v for _, v in second) == max(KEYS.values())  # never on top of the old state


def test_clean_up_only_when_not_running(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {INPUT: 1})
    app = KafkaStreams(topology(), config(broker.bootstrap, str(tmp_path), None, "cleanup-app"))
    app.start()
    try:
        assert app.wait_for_state(State.RUNNING, timeout=60)
        produce(broker.bootstrap, INPUT, [(b"k", b"x", RECENT_TS)])
        wait_until(lambda: read_output(broker.bootstrap) == [("k", 1)], timeout=60,
                   message="the record counted")
        with pytest.raises(IllegalStateError, match="close"):
            app.clean_up()
        # another instance using the same directory is refused, naming it
        other = KafkaStreams(topology(), config(broker.bootstrap, str(tmp_path), None,
                                                "cleanup-app"))
        with pytest.raises(StateDirLockedError, match="cleanup-app"):
            other.clean_up()
    finally:
        assert app.close(timeout=30)
    app.clean_up()
    assert not [p for p in (tmp_path / "cleanup-app").iterdir()
                if p.name not in (".lock", "kafka-streams-process-metadata")]
