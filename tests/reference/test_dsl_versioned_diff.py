"""Random versioned-table cases (dsl_versioned_random.py) against Kafka Streams 4.4's driver.

A fixed seed's few cases run by default; ``DSL_DIFF_VERSIONED_SEED`` / ``_CASES`` (or ``make
dsl-diff-versioned``) run more. A failure prints the seed and each differing case's JSON.
"""

from __future__ import annotations

import os

from . import dsl_versioned_random
from .dsl_diff import differences
from .dsl_runner import KafkaStreamsRunner
from .test_dsl_diff import kafka_streams  # noqa: F401 - the runner fixture

SEED = int(os.environ.get("DSL_DIFF_VERSIONED_SEED", "3"))
CASES = int(os.environ.get("DSL_DIFF_VERSIONED_CASES", "30"))


def test_random_versioned_cases(kafka_streams: KafkaStreamsRunner) -> None:  # noqa: F811
    cases = dsl_versioned_random.cases(SEED, CASES)
    failures = [d for d in (differences(c, kafka_streams) for c in cases) if d]
    assert not failures, f"seed {SEED}: {len(failures)} of {len(cases)} cases differ\n" + \
        "\n".join(failures[:5])
