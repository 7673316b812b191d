"""connect.runtime.thread_switching: the GIL switch interval `streams connect` runs with."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from connect.runtime.thread_switching import SWITCH_INTERVAL_S, tune_thread_switching
from streams.cli import connect_cmd


@pytest.fixture
def restored_interval() -> Iterator[None]:
    interval = sys.getswitchinterval()
    yield
    sys.setswitchinterval(interval)


def test_tune_thread_switching_shortens_cpythons_default(restored_interval: None) -> None:
    sys.setswitchinterval(0.005)  # CPython's default
    tune_thread_switching()
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
    assert SWITCH_INTERVAL_S < 0.005


class _WorkerThatCannotStart:
    url = "http://127.0.0.1:0"

    async def start(self) -> None:
        raise OSError("address already in use")

    async def stop(self) -> None:
        return None


def test_streams_connect_applies_it_when_it_serves_a_worker(restored_interval: None,
                                                           capsys: pytest.CaptureFixture) -> None:
    sys.setswitchinterval(0.005)
    assert connect_cmd._serve(_WorkerThatCannotStart()) == 1
    assert "cannot start: address already in use" in capsys.readouterr().err
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
