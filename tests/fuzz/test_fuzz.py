"""CI mode of the protocol fuzzer: a fixed seed, a bounded number of cases, the full oracle.

The broker runs as a subprocess; the corpus is recorded from aiokafka, kafka-python and
confluent-kafka at the start. The run fails on any finding of the oracle: the broker died, a
produce/consume round trip failed, a traceback was logged, RSS went over 1 GiB, or the broker
did not restart cleanly on its data dir. Notes (batches accepted that Kafka refuses, handler
exceptions logged as one line) are printed but do not fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .runner import Options, run

CI_SEED = 20260801
CI_CASES = 1500
CI_SECONDS = 75.0  # the fuzz loop stops here even if a slow machine has not sent every case


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_protocol_fuzz(tmp_path: Path) -> None:
    report = run(Options(seed=CI_SEED, workdir=tmp_path / "fuzz", cases=CI_CASES,
                         seconds=CI_SECONDS, log=lambda line: print(line, flush=True)))
    rendered = report.render()
    print(rendered)
    assert report.cases_sent > 0
    assert not report.failures, rendered
