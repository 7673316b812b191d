"""DSL results against Kafka Streams itself: each case runs on Kafka Streams' TopologyTestDriver
(TopologyRunner.java, one JVM per session) and on ours; outputs and stores must be equal.

Random cases (dsl_random.py) use a fixed seed unless DSL_DIFF_SEED is set; a failure prints the
seed and the case's JSON, which ``DSL_DIFF_CASE=<file.json>`` replays alone. Composed cases
(several stateful stages each) use DSL_DIFF_COMPOSED_SEED; ``make dsl-diff`` runs thousands
with a fresh seed and shrinks every mismatch (tests/reference/dsl_diff.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import dsl_cases, dsl_random
from .conftest import unavailable
from .dsl_diff import differences
from .dsl_runner import KafkaStreamsRunner
from .kafka import PrepareError

SEED = int(os.environ.get("DSL_DIFF_SEED", "20261125"))
RANDOM_CASES = int(os.environ.get("DSL_DIFF_CASES", "150"))
# composed cases (several stateful stages each; ``make dsl-diff`` runs thousands)
COMPOSED_SEED = int(os.environ.get("DSL_DIFF_COMPOSED_SEED", "20261127"))
COMPOSED_CASES = int(os.environ.get("DSL_DIFF_COMPOSED_CASES", "150"))


@pytest.fixture(scope="session")
def kafka_streams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaStreamsRunner]:
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    try:
        runner = KafkaStreamsRunner(tmp_path_factory.mktemp("dsl") / "kafka-streams.log")
    except PrepareError as exc:  # no javac, or the runner does not compile
        pytest.skip(f"the Kafka Streams runner cannot be built: {exc}")
    try:
        yield runner
    finally:
        runner.close()


@pytest.mark.parametrize("case", dsl_cases.all_cases(), ids=lambda c: c["name"])
def test_case(case: dict[str, Any], kafka_streams: KafkaStreamsRunner) -> None:
    diff = differences(case, kafka_streams)
    assert diff is None, diff


def test_random_topologies(kafka_streams: KafkaStreamsRunner) -> None:
    """Random chains of the vocabulary on random inputs; every difference is reported."""
    replay = os.environ.get("DSL_DIFF_CASE")
    cases = [json.loads(Path(replay).read_text())] if replay else \
        dsl_random.cases(SEED, RANDOM_CASES)
    failures = [d for d in (differences(c, kafka_streams) for c in cases) if d]
    assert not failures, f"seed {SEED}: {len(failures)} of {len(cases)} cases differ\n" + \
        "\n".join(failures[:5])



@pytest.mark.parametrize("cache", [False, True], ids=["cache-off", "cache-on"])
def test_composed_topologies(kafka_streams: KafkaStreamsRunner, cache: bool) -> None:
    """Random topologies chaining several stateful stages (dsl_random.composed_case), record
    cache off, then on (10 MB both sides); ``python -m tests.reference.dsl_diff --seed S
    --cache off|on`` shrinks what differs."""
    cases = dsl_random.composed_cases(COMPOSED_SEED, COMPOSED_CASES, cache=cache)
    failures = [d for d in (differences(c, kafka_streams) for c in cases) if d]
    assert not failures, f"seed {COMPOSED_SEED}, cache {'on' if cache else 'off'}: " \
        f"{len(failures)} of {len(cases)} cases differ\n" + "\n".join(failures[:5])
