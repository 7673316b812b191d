"""Group configs are written off the event loop: the rewrite and fsync of group_configs.json
used to run on it, and with thousands of configured groups each IncrementalAlterConfigs stalled
the broker for seconds (fuzzing the share-group seeds: round trips timed out, SIGTERM was not
handled). An answer still waits until its change is on disk."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from streams.broker.config import BrokerConfig
from streams.broker.groups import group_configs
from streams.broker.groups.group_configs import GroupConfigs


def test_save_leaves_the_loop_free_and_returns_once_written(tmp_path: Path, monkeypatch
                                                            ) -> None:
    held = threading.Event()
    entered = threading.Event()
    real_fsync = group_configs.os.fsync

    def slow_fsync(fd: int) -> None:
        entered.set()
        held.wait(30)
        real_fsync(fd)

    monkeypatch.setattr(group_configs.os, "fsync", slow_fsync)
    configs = GroupConfigs(BrokerConfig(data_dir=tmp_path), tmp_path)

    async def scenario() -> None:
        configs.store("a", {"share.auto.offset.reset": "earliest"})
        first = asyncio.create_task(configs.save())
        await asyncio.to_thread(entered.wait, 30)  # the write is in its fsync...
        configs.store("b", {"share.auto.offset.reset": "latest"})
        second = asyncio.create_task(configs.save())
        ticks = 0
        for _ in range(5):  # ...and the loop still runs other work
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 5 and not first.done() and not second.done()
        held.set()
        await asyncio.wait_for(asyncio.gather(first, second), 30)
        stored = json.loads((tmp_path / group_configs.FILE_NAME).read_text())["groups"]
        assert stored == {"a": {"share.auto.offset.reset": "earliest"},
                          "b": {"share.auto.offset.reset": "latest"}}

    asyncio.run(scenario())
    reloaded = GroupConfigs(BrokerConfig(data_dir=tmp_path), tmp_path)
    reloaded.load()
    assert set(reloaded.groups) == {"a", "b"}
