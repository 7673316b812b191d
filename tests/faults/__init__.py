"""Multi-process fault harness: catalogue topologies run by several app instances while faults
happen, compared with the TopologyTestDriver on the same input.

catalogue.py (scenarios), oracle.py (the driver), app_runner.py (one instance, a child
process), cluster.py (broker and instances as processes), faults.py (fault schedules),
output.py (reading the result), compare.py (the verdict), harness.py (one run),
test_faults.py (the CI mode), catalogue_suite.py (``make test-faults``: the pairings the CI
mode leaves out), soak.py (``make soak``).

Connect has its own runs: connect_harness.py (FileStream pipelines on distributed workers
under faults), connect_cluster.py (its processes), test_connect_faults.py (CI),
connect_suite.py (``make connect-faults``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared test helpers (tests/helpers.py, tests/runtime/kafka_io.py) live beside this
# package; pytest's conftest puts tests/ on sys.path, ``python -m tests.faults.*`` does not.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
