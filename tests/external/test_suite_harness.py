"""The kafka-python suite harness: which failures get a second run, and what counts after it."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load_harness() -> ModuleType:
    path = Path(__file__).with_name("kafka_python_suite.py")
    spec = importlib.util.spec_from_file_location("kafka_python_suite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


harness = _load_harness()
RACE = next(iter(harness.CLIENT_RACES))
OTHER = "test/integration/test_consumer_integration.py::test_kafka_consumer"


def _run(code: int, failed: list[str], summary: str = "= 1 failed, 49 passed in 9.0s =") -> object:
    return harness.PytestRun(code, summary, failed)


class _Rerun:
    def __init__(self, result: object) -> None:
        self.result = result
        self.calls: list[list[str]] = []

    def __call__(self, node_ids: list[str]) -> object:
        self.calls.append(node_ids)
        return self.result


def test_output_filter_collects_failed_and_errored_node_ids() -> None:
    filt = harness.OutputFilter(io.StringIO())
    for line in (
        f"PASSED {OTHER}\n",
        f"FAILED {RACE} - AssertionError: assert set() == {{'msg 0'}}\n",
        "ERROR test/integration/test_admin_integration.py::test_x - KafkaTimeoutError\n",
        "=========== 1 failed, 1 passed, 1 error in 3.1s ===========\n",
    ):
        filt.feed(line)
    assert filt.failed == [RACE, "test/integration/test_admin_integration.py::test_x"]
    assert filt.summary is not None and "1 failed" in filt.summary


def test_only_known_races_failing_get_a_second_run_that_decides() -> None:
    first = _run(1, [RACE])
    passing = _Rerun(_run(0, [], "= 1 passed in 0.5s ="))
    assert harness.rerun_client_races(first, passing).code == 0
    assert passing.calls == [[RACE]]

    failing_again = _Rerun(_run(1, [RACE]))
    assert harness.rerun_client_races(first, failing_again).code == 1


@pytest.mark.parametrize(
    "first",
    [
        _run(1, [RACE, OTHER]),  # another failure beside the race: no second chance
        _run(1, [OTHER]),
        _run(0, []),  # nothing failed
        _run(2, [RACE]),  # interrupted run: its failure list is not the whole story
    ],
)
def test_other_outcomes_stand_as_they_are(first: object) -> None:
    rerun = _Rerun(_run(0, []))
    assert harness.rerun_client_races(first, rerun) is first
    assert rerun.calls == []
