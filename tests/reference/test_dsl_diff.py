"""DSL results against Kafka Streams itself: each case runs on Kafka Streams' TopologyTestDriver
(TopologyRunner.java, one JVM per session) and on ours; outputs and stores must be equal.

Random cases (dsl_random.py) use a fixed seed unless DSL_DIFF_SEED is set; a failure prints the
seed and the case's JSON, which ``DSL_DIFF_CASE=<file.json>`` replays alone.
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
from .dsl_runner import KafkaStreamsRunner
from .dsl_translate import annotate, run_ours
from .kafka import PrepareError

SEED = int(os.environ.get("DSL_DIFF_SEED", "20261125"))
RANDOM_CASES = int(os.environ.get("DSL_DIFF_CASES", "150"))


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


def normalise(answer: dict[str, Any], annotated: dict[str, Any]) -> dict[str, Any]:
    """Deliberate differences (docs/kafka-differences.md, "Streams DSL") made equal here.

    Errors: only whether a side refused the case is compared, not the message (Java exception
    text against Python's). Window and session stores: ``all()`` order is not part of Kafka's
    API (its RocksDB window store runs key-then-start within a segment, ours start-then-key),
    so their entries are compared sorted; key-value stores keep their order (both by key bytes).
    """
    if "error" in answer:
        return {"error": True}
    stores = {name: sorted(entries, key=repr) if annotated["stores"][name] != "kv" else entries
              for name, entries in answer["stores"].items()}
    return {"outputs": answer["outputs"], "stores": stores}


def differences(case: dict[str, Any], runner: KafkaStreamsRunner) -> str | None:
    annotated = annotate(case)
    kafka, ours = runner.run(annotated), run_ours(annotated)
    kafka, ours = normalise(kafka, annotated), normalise(ours, annotated)
    if kafka == ours:
        return None
    lines = [f"case {case.get('name')}: {json.dumps(case)}"]
    for part in ("error", "outputs", "stores"):
        theirs, mine = kafka.get(part), ours.get(part)  # as normalised
        if part == "error" or not isinstance(theirs, dict) or not isinstance(mine, dict):
            if theirs != mine:
                lines.append(f"  {part}: kafka={theirs!r}\n  {' ' * len(part)}  ours ={mine!r}")
            continue
        for name in sorted(set(theirs) | set(mine)):
            if theirs.get(name) != mine.get(name):
                lines.append(f"  {part}[{name}]:\n    kafka={theirs.get(name)}\n"
                             f"    ours ={mine.get(name)}")
    return "\n".join(lines)


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
