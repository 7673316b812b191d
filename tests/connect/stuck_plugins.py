"""Connectors that block forever, for the thread-per-task tests (loaded by worker processes
through PYTHONPATH as ``stuck_plugins.<Class>``).

``StuckSource`` blocks in ``poll()`` and in ``stop()`` (so neither the task's thread nor the thread
that calls ``stop()`` ever returns); ``StuckSink`` blocks in ``put()`` once it has records. Both
block on an event nobody sets, as a plugin stuck on a dead socket would.
"""

from __future__ import annotations

import threading
from typing import Any

from connect.api import SinkConnector, SinkTask, SourceConnector, SourceTask

_NEVER = threading.Event()


class StuckSourceTask(SourceTask):
    def start(self, props: dict[str, str]) -> None:
        pass

    def poll(self) -> list[Any] | None:
        _NEVER.wait()
        return None

    def stop(self) -> None:
        _NEVER.wait()


class StuckSourceConnector(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return StuckSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass


class StuckSinkTask(SinkTask):
    def start(self, props: dict[str, str]) -> None:
        pass

    def put(self, records: list[Any]) -> None:
        if records:
            _NEVER.wait()

    def stop(self) -> None:
        pass


class StuckSinkConnector(SinkConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return StuckSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass


class SlowStopSourceTask(SourceTask):
    """Polls nothing; ``stop()`` takes ``stop.seconds`` (a connector closing a slow resource)."""

    def start(self, props: dict[str, str]) -> None:
        self.stop_seconds = float(props.get("stop.seconds", "2"))
        self.stopped = threading.Event()

    def poll(self) -> list[Any] | None:
        self.stopped.wait(0.05)
        return None

    def stop(self) -> None:
        self.stopped.wait(self.stop_seconds)
        self.stopped.set()


class SlowStopSourceConnector(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return SlowStopSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class SlowValidateSourceConnector(SourceConnector):
    """``validate()`` writes ``entered.file`` and then blocks until ``release.file`` exists (a
    connector checking its config against a slow external system)."""

    def validate(self, props: dict[str, str]) -> Any:
        import time
        from pathlib import Path

        Path(props["entered.file"]).write_text("validating")
        release = Path(props["release.file"])
        while not release.exists():
            time.sleep(0.05)
        return super().validate(props)

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return SlowStopSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        pass
