"""Run the reference Apache Kafka (tests/reference/kafka.py start) with a benchmark's JVM options.

    python benchmarks/kafka_node.py --port P --data-dir D [--jvm server|reference]

``tests/reference/kafka.py`` starts its JVM for quick tests (512 MB heap, serial GC, the C1
compiler only: short start-up, slower steady state). A throughput comparison should run Kafka as
its own ``kafka-server-start.sh`` does by default (``KAFKA_HEAP_OPTS="-Xmx1G -Xms1G"`` and
kafka-run-class.sh's ``KAFKA_JVM_PERFORMANCE_OPTS``: G1, full JIT), so ``--jvm server`` (the
default) swaps in those options and then runs ``kafka.py start`` unchanged: the same KRaft
node, properties and readiness check. ``--jvm reference`` keeps kafka.py's options.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

KAFKA_PY = Path(__file__).resolve().parent.parent / "tests" / "reference" / "kafka.py"

# kafka-server-start.sh's default heap and kafka-run-class.sh's default performance options.
SERVER_JVM_OPTS = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                   "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                   "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]


def load_kafka_py():  # type: ignore[no-untyped-def]
    """tests/reference/kafka.py as a module (it is a script, not a package import here)."""
    spec = importlib.util.spec_from_file_location("reference_kafka", KAFKA_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--jvm", choices=("server", "reference"), default="server",
                   help="JVM options: kafka-server-start.sh's defaults (server) or "
                        "tests/reference/kafka.py's own (reference)")
    args = p.parse_args(argv)
    kafka = load_kafka_py()
    if args.jvm == "server":
        kafka.JAVA_OPTS[:] = SERVER_JVM_OPTS
    return int(kafka.main(["start", "--port", str(args.port), "--data-dir", args.data_dir]))


if __name__ == "__main__":
    sys.exit(main())
