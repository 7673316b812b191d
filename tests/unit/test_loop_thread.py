"""LoopThread: an event loop on a daemon thread that synchronous code hands coroutines to."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from streams.kafka.loop_thread import LoopThread, RunTimeoutError


@pytest.fixture
def loop_thread():
    lt = LoopThread("test-loop").start()
    yield lt
    lt.stop()


def test_run_returns_the_result_computed_on_the_loop_thread(loop_thread: LoopThread) -> None:
    async def where() -> tuple[str, asyncio.AbstractEventLoop]:
        await asyncio.sleep(0)
        return threading.current_thread().name, asyncio.get_running_loop()

    name, loop = loop_thread.run(where(), timeout=10)
    assert name == "test-loop"
    assert loop is loop_thread.loop
    assert loop_thread.running


def test_state_survives_between_calls(loop_thread: LoopThread) -> None:
    """The point of the bridge: objects bound to the loop (clients, queues) outlive one call."""
    queue: asyncio.Queue[int] = loop_thread.run(_make_queue(), timeout=10)
    loop_thread.run(queue.put(7), timeout=10)
    assert loop_thread.run(queue.get(), timeout=10) == 7


async def _make_queue() -> asyncio.Queue[int]:
    return asyncio.Queue()


def test_run_raises_the_coroutines_exception(loop_thread: LoopThread) -> None:
    async def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        loop_thread.run(fail(), timeout=10)
    assert loop_thread.run(_answer(), timeout=10) == 42  # the loop goes on


async def _answer() -> int:
    return 42


def test_a_timeout_error_raised_by_the_coroutine_is_not_mistaken_for_ours(
        loop_thread: LoopThread) -> None:
    async def times_out() -> None:
        raise TimeoutError("the broker's")

    with pytest.raises(TimeoutError, match="the broker's") as raised:
        loop_thread.run(times_out(), timeout=10)
    assert not isinstance(raised.value, RunTimeoutError)


def test_run_past_its_timeout_cancels_the_coroutine(loop_thread: LoopThread) -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(RunTimeoutError, match="test-loop"):
        loop_thread.run(forever(), timeout=0.05)
    assert cancelled.wait(10)
    assert loop_thread.run(_answer(), timeout=10) == 42


def test_submit_returns_a_future(loop_thread: LoopThread) -> None:
    futures = [loop_thread.submit(_double(i)) for i in range(5)]
    assert [f.result(10) for f in futures] == [0, 2, 4, 6, 8]


async def _double(i: int) -> int:
    await asyncio.sleep(0)
    return 2 * i


def test_stop_cancels_pending_work_and_lets_it_unwind() -> None:
    lt = LoopThread("stopping").start()
    started, unwound = threading.Event(), threading.Event()

    async def pending() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup may still await while the loop stops
            unwound.set()

    future = lt.submit(pending())
    background: list[asyncio.Task[None]] = []

    async def spawn() -> None:  # a task nobody waits for, as a client's heartbeat would be
        background.append(asyncio.get_running_loop().create_task(asyncio.Event().wait()))

    lt.run(spawn(), timeout=10)
    assert started.wait(10)
    assert lt.stop(timeout=10)
    assert unwound.is_set()
    assert background[0].cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(10)
    assert not lt.running
    assert lt.loop.is_closed()


def test_stop_twice_and_use_after_stop() -> None:
    lt = LoopThread().start()
    assert lt.stop(timeout=10)
    assert lt.stop(timeout=10)
    coro = _answer()
    with pytest.raises(RuntimeError, match="stopped"):
        lt.run(coro, timeout=1)
    assert coro.cr_frame is None  # closed, so no "never awaited" warning
    with pytest.raises(RuntimeError, match="stopped"):
        lt.start()


def test_stop_before_start_and_run_before_start() -> None:
    lt = LoopThread()
    with pytest.raises(RuntimeError, match="not started"):
        lt.submit(_answer())
    assert lt.stop()
    assert not lt.running


def test_start_twice_keeps_one_loop() -> None:
    with LoopThread() as lt:
        loop = lt.loop
        assert lt.start() is lt
        assert lt.loop is loop


def test_run_from_the_loops_own_thread_refuses_instead_of_deadlocking(
        loop_thread: LoopThread) -> None:
    async def nested() -> None:
        loop_thread.run(_answer(), timeout=1)

    with pytest.raises(RuntimeError, match="deadlock"):
        loop_thread.run(nested(), timeout=10)


def test_stop_from_a_task_on_the_loop() -> None:
    lt = LoopThread().start()

    async def stop_self() -> bool:
        return lt.stop()

    assert lt.submit(stop_self()).result(10) is False  # cannot join itself
    lt._thread.join(10)  # noqa: SLF001 - the thread ends once the task returns
    assert not lt._thread.is_alive()  # noqa: SLF001
    assert lt.loop.is_closed()
