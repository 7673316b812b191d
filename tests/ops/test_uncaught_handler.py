"""set_uncaught_exception_handler: REPLACE_THREAD keeps the instance processing with a new
stream thread, SHUTDOWN_CLIENT stops it in ERROR, SHUTDOWN_APPLICATION stops every instance
(here one in this process and one in a child process)."""

from __future__ import annotations

import pytest
from helpers import RECENT_TS, create_topics, wait_until

from streams import KafkaStreams
from streams.kafka.batching import default_partition
from streams.runtime import State
from streams.runtime.app import (
    IllegalStateError,
    StreamThreadExceptionResponse,
)

from .ops_app import COUNTS, INPUT, config, topology
from .procs import AppProcess, produce

R = StreamThreadExceptionResponse


def test_replace_thread_keeps_processing(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {INPUT: 2})
    failures = []

    def poison(value: str) -> bool:
        return value == "poison" and not failures  # fails once; the new thread gets past it

    seen: list[BaseException] = []
    app = KafkaStreams(topology(poison), config(broker.bootstrap, str(tmp_path), None, "rt-app"))

    def handler(exc: BaseException) -> R:
        seen.append(exc)
        failures.append(exc)
        return R.REPLACE_THREAD
    app.set_uncaught_exception_handler(handler)
    app.start()
    try:
        produce(broker.bootstrap, INPUT, [(b"a", b"x", RECENT_TS), (b"a", b"poison", RECENT_TS),
                                          (b"a", b"x", RECENT_TS), (b"b", b"x", RECENT_TS)])
        wait_until(lambda: app.state is State.RUNNING and app.store(COUNTS).get("a") == 3
                   and app.store(COUNTS).get("b") == 1, timeout=60,
                   message="every record counted after the thread was replaced")
        assert len(seen) == 1 and isinstance(seen[0].__cause__ or seen[0], Exception)
        assert "poison" in repr(seen[0]) + repr(seen[0].__cause__)
        assert app.thread_replacements == 1
        threads = {dict(m.tags).get("thread-id") for m in app.metrics()} - {None}
        assert threads == {"rt-app-StreamThread-2"}, threads  # the failed thread's are gone
        with pytest.raises(IllegalStateError, match="before start"):
            app.set_uncaught_exception_handler(handler)
    finally:
        assert app.close(timeout=30)


def test_shutdown_client_ends_in_error(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {INPUT: 1})
    app = KafkaStreams(topology(lambda v: v == "poison"),
                       config(broker.bootstrap, str(tmp_path), None, "sc-app"))
    app.set_uncaught_exception_handler(lambda exc: R.SHUTDOWN_CLIENT)
    app.start()
    try:
        produce(broker.bootstrap, INPUT, [(b"a", b"poison", RECENT_TS)])
        assert app.wait_for_state(State.ERROR, timeout=60)
        assert isinstance(app.error, Exception) and app.thread_replacements == 0
    finally:
        app.close(timeout=30)


def test_shutdown_application_stops_every_instance(broker, tmp_path) -> None:
    create_topics(broker.bootstrap, {INPUT: 2})
    # the child has no poison: it stops only because the group tells it to
    child = AppProcess(broker.bootstrap, tmp_path / "b", "", "sa-app",
                       env={"OPS_HANDLER": "SHUTDOWN_APPLICATION"}).start()
    app = KafkaStreams(topology(lambda v: v == "poison"),
                       config(broker.bootstrap, str(tmp_path / "a"), None, "sa-app"))
    app.set_uncaught_exception_handler(lambda exc: R.SHUTDOWN_APPLICATION)
    app.start()
    try:
        wait_until(lambda: app.state is State.RUNNING and child.running() and
                   len(app.local_task_ids()) == 1, timeout=60,
                   message="both instances running, one task each")
        mine = int(app.local_task_ids()[0].split("_")[1])
        key = next(k for k in (f"k{i}".encode() for i in range(100))
                   if default_partition(k, 2) == mine)
        # a poison record on this instance's partition: it asks for the application's
        # shutdown through the group, and the other instance stops too
        produce(broker.bootstrap, INPUT, [(key, b"poison", RECENT_TS)])
        assert app.wait_for_state(State.ERROR, timeout=90), app.state
        wait_until(lambda: "STATE ERROR" in child.output(), timeout=90,
                   message=f"the child in ERROR; it said: {child.output()[-2000:]}")
        assert "ApplicationShutdownRequested" in child.output()
        assert "poison" in repr(app.error) + repr(app.error.__cause__)
    finally:
        app.close(timeout=30)
        child.stop()
