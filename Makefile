# Every target creates (once) and reuses the local virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# compat mode puts the project on sys.path through a .pth file: Spark finds the top-level
# pyspark_streams module (its data source discovery scans sys.path, which the default editable
# mode's import hook does not show). A regular (non-editable) install needs nothing special.
EDITABLE := --config-settings editable_mode=compat -e

.PHONY: demo test lint bench bench-deps bench-broker bench-streams bench-connect bench-spark bench-recovery clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(EDITABLE) '.[dev,spark,spark-connect]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo.py

test: $(VENV)/.installed kafka-reference
	$(PY) -m ruff check streams connect tests benchmarks examples
	$(PY) -m pytest -q -rfE
	$(PY) -m pytest -q -rfE -m on_kafka --kafka=reference $(KAFKA_SUITES)
	$(PY) tests/external/kafka_python_suite.py

# Our runtime on Apache Kafka (issue [9] part 4): the runtime suites, the aiokafka adapter's
# contract tests and the fault harness's CI runs with --kafka=reference, each test on a fresh
# Apache Kafka (tests/reference/kafka.py; broker_restart/outage restart it on the same data dir).
# Not part of `make test` (it would double its time). Without java/mvn every test skips, saying so.
KAFKA_SUITES := tests/runtime/test_zombie_runtime.py tests/runtime/test_crash_runtime.py \
	tests/runtime/test_commit_discipline_runtime.py tests/runtime/test_join_repartition_runtime.py \
	tests/runtime/test_suppress_restart.py tests/unit/test_kafka_internals.py tests/faults
.PHONY: test-on-kafka
test-on-kafka: $(VENV)/.installed kafka-reference
	$(PY) -m pytest -q -rfE --kafka=reference $(KAFKA_SUITES)

# Apache Kafka as a 3-node KRaft cluster (python tests/reference/kafka.py cluster; replication
# factor 3, min.insync.replicas 2): the fault harness's exactly_once_v2 scenarios while a node is
# SIGKILLed and restarted (its partitions' leaders move), the pause-feed scenario, and the
# internal topics' replication factor. Each test starts its own cluster (about 1 min).
.PHONY: test-cluster
test-cluster: $(VENV)/.installed kafka-reference
	$(PY) -m pytest -q -rfE --kafka=cluster tests/runtime/test_cluster_runtime.py \
		tests/faults/test_faults.py -k "cluster or pauses_while_input"

# The fault catalogue's pairings that `make test` leaves out for its time budget
# (tests/faults/catalogue_suite.py: 6 runs, about 3 minutes; test_faults.py in `make test` runs
# every operator family and every fault kind at least once).
.PHONY: test-faults
test-faults: $(VENV)/.installed
	$(PY) -m pytest -q -rfE tests/faults/catalogue_suite.py

# The at_least_once membership lease outside the commit path (tests/faults/lease_suite.py): the
# pause scenario with app0 stalled right after an iteration handed its output to the producer
# (about a minute), so apart from `make test`, whose CI stall test stalls inside the commit.
.PHONY: test-lease
test-lease: $(VENV)/.installed
	$(PY) -m pytest -q -rfE tests/faults/lease_suite.py

# The streams sink's at-least-once streaming query across a SIGKILL of its Spark driver while
# input flows, restarted from its checkpoint (tests/spark/alos_kill_suite.py: every row at least
# once, duplicates printed): two driver start-ups, 2-4 minutes, so apart from `make test`.
.PHONY: test-spark-kill
test-spark-kill: $(VENV)/.installed
	$(PY) -m pytest -q -rfE -s tests/spark/alos_kill_suite.py

# Apache Kafka's own Connect 4.3.1 (standalone and distributed, FileStream connectors, SIGKILL and
# rejoin) and its MirrorMaker 2 (between two of our brokers) against our broker: about 4 minutes,
# so not part of `make test`. Jars from Maven Central into .reference/connect-libs/ (once; pinned
# in tests/reference/connect/pom.xml). Without java or mvn every test skips, saying so.
# Every Connect fault kind of tests/faults/connect_harness.py alone, under at-least-once and
# exactly-once (18 runs, about 10 minutes); `make test` runs two combined schedules.
.PHONY: connect-faults
connect-faults: $(VENV)/.installed
	$(PY) -m pytest -q -rfE tests/faults/connect_suite.py

.PHONY: connect-reference
connect-reference: $(VENV)/.installed
	$(PY) -m tests.reference.connect prepare
	$(PY) -m pytest -q -rfE tests/reference/connect/suite.py tests/reference/connect/rest_suite.py

# streams mirror crashed while records flow (SIGKILL and SIGSTOP of one of two processes sharing
# a flow, with checkpoints checked; SIGKILL and SIGSTOP under exactly-once mirroring): about
# 4 minutes, so apart from `make test`.
.PHONY: test-mirror
test-mirror: $(VENV)/.installed
	$(PY) -m pytest -q -rfE tests/mirror/crash_suite.py

# Our MirrorMaker 2 and Kafka's (connect-mirror 4.3.1) read each other's checkpoints, offset syncs
# and heartbeats (Kafka's RemoteClusterUtils through a small Java class), and `streams mirror`
# between our broker and Apache Kafka 4.4 both ways: about 4 minutes.
.PHONY: mirror-reference
mirror-reference: $(VENV)/.installed kafka-reference
	$(PY) -m tests.reference.connect prepare
	$(PY) -m pytest -q -rfE tests/reference/connect/mirror_suite.py tests/mirror/kafka_suite.py

# The protocol fuzzer (tests/fuzz) with a random seed for FUZZ_SECONDS; it prints the seed and
# every failing frame (python -m tests.fuzz --seed S --seconds N reproduces a run).
FUZZ_SECONDS ?= 180
.PHONY: fuzz
fuzz: $(VENV)/.installed
	$(PY) -m tests.fuzz --seconds $(FUZZ_SECONDS)

# kafka-python 3.0.12's own integration tests (sdist from PyPI) against our broker.
.PHONY: test-external
test-external: $(VENV)/.installed
	$(PY) tests/external/kafka_python_suite.py

# confluent-kafka-python's own integration tests (share_consumer, consumer, admin) against our
# broker, then against Apache Kafka 4.4. Its tests are not in the PyPI sdist: clone the repository
# at the installed version's tag OUTSIDE this checkout and point CONFLUENT_KAFKA_PYTHON_SRC at it
# (git clone --depth 1 --branch v2.16.1 https://github.com/confluentinc/confluent-kafka-python).
.PHONY: test-confluent-suite
test-confluent-suite: $(VENV)/.installed
	@test -n "$(CONFLUENT_KAFKA_PYTHON_SRC)" || (echo "set CONFLUENT_KAFKA_PYTHON_SRC to a confluent-kafka-python checkout (see tests/external/confluent_suite.py)"; exit 2)
	-$(PY) tests/external/confluent_suite.py --source $(CONFLUENT_KAFKA_PYTHON_SRC)
	$(PY) tests/external/confluent_suite.py --source $(CONFLUENT_KAFKA_PYTHON_SRC) --kafka

# The fault harness's soak mode (tests/faults): random fault schedules over random scenarios for
# SOAK_MINUTES; prints each failing run's seed (python -m tests.faults.soak --seed S) and totals.
.PHONY: soak
SOAK_MINUTES ?= 30
soak: $(VENV)/.installed
	$(PY) -m tests.faults.soak --minutes $(SOAK_MINUTES) $(if $(SEED),--seed $(SEED))

# The same on a 3-node Apache Kafka cluster (tests/reference/kafka.py cluster): a broker SIGKILL
# that moves partition leaders joins the random faults. Each run starts its own cluster.
.PHONY: soak-cluster
soak-cluster: $(VENV)/.installed kafka-reference
	$(PY) -m tests.faults.soak --kafka cluster --minutes $(SOAK_MINUTES) $(if $(SEED),--seed $(SEED))

# Random composed DSL topologies (tests/reference/dsl_diff.py) on Kafka Streams 4.4's own
# TopologyTestDriver and ours, cache off and on at random; prints the seed (fresh unless SEED is
# given) and every mismatch shrunk to its smallest case (also written to dsl-diff-failures/).
DSL_DIFF_CASES ?= 2000
DSL_DIFF_CACHE ?= random
.PHONY: dsl-diff
dsl-diff: $(VENV)/.installed kafka-reference
	$(PY) -m tests.reference.dsl_diff --cases $(DSL_DIFF_CASES) --cache $(DSL_DIFF_CACHE) $(if $(SEED),--seed $(SEED))

# Random versioned-table / join-grace cases against Kafka Streams 4.4's TopologyTestDriver
# (tests/reference/dsl_versioned_random.py); a fresh seed unless DSL_DIFF_VERSIONED_SEED is set.
.PHONY: dsl-diff-versioned
DSL_DIFF_VERSIONED_CASES ?= 2000
dsl-diff-versioned: $(VENV)/.installed kafka-reference
	seed=$${DSL_DIFF_VERSIONED_SEED:-$$(date +%s)}; echo "dsl-diff-versioned: seed $$seed"; \
	DSL_DIFF_VERSIONED_SEED=$$seed DSL_DIFF_VERSIONED_CASES=$(DSL_DIFF_VERSIONED_CASES) \
	$(PY) -m pytest -q -rfE --timeout=0 tests/reference/test_dsl_versioned_diff.py

# Apache Kafka (pinned in tests/reference/pom.xml) for the reference tests: the jars and the Maven
# repository go to .reference/ (git-ignored), downloaded once. Without java or mvn it says so and
# goes on (the reference tests then skip with one line); a failed download fails this target but
# not `make test` (target-specific variables reach prerequisites), whose reference tests then skip.
.PHONY: kafka-reference
test: KAFKA_REFERENCE_OPTIONAL := 1
kafka-reference:
	@if command -v java >/dev/null && command -v mvn >/dev/null; then \
		$(PYTHON) tests/reference/kafka.py prepare || [ -n "$(KAFKA_REFERENCE_OPTIONAL)" ]; \
	else echo "kafka-reference: java or mvn missing, the reference tests will skip"; fi

lint: $(VENV)/.installed
	$(PY) -m ruff check streams connect tests benchmarks examples

bench: bench-broker bench-streams bench-connect bench-spark

# Quix Streams (the Quix rows of bench-streams and bench-recovery) pins an older confluent-kafka
# than ours, so it gets a virtualenv of its own, pinned in benchmarks/quix-requirements.txt.
QUIX_VENV := .bench/quix-venv
$(QUIX_VENV)/.installed: benchmarks/quix-requirements.txt
	$(PYTHON) -m venv $(QUIX_VENV)
	$(QUIX_VENV)/bin/pip install -q -r benchmarks/quix-requirements.txt
	touch $@

bench-deps: $(VENV)/.installed $(QUIX_VENV)/.installed
	$(PY) -m pip install -q $(EDITABLE) '.[bench]'

bench-broker: bench-deps
	$(PY) benchmarks/broker_perf.py

bench-streams: bench-deps
	$(PY) benchmarks/streams_perf.py

bench-connect: bench-deps
	$(PY) benchmarks/connect_perf.py

bench-spark: $(VENV)/.installed
	$(PY) benchmarks/spark_perf.py

bench-recovery: bench-deps
	$(PY) benchmarks/recovery_perf.py --frameworks ours,ks,quix --quix-python $(QUIX_VENV)/bin/python

clean:
	rm -rf $(VENV) .pytest_cache
